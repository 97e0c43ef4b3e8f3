# BATON_TOKEN_KEY: the HMAC key of call tokens. Terraform generates it and
# writes it as a write-only argument, so it never appears in a plan or in
# the state. Bump var.token_key_version to rotate it.
ephemeral "random_password" "token_key" {
  length  = 64
  special = false
}

resource "google_secret_manager_secret" "token_key" {
  project   = var.project
  secret_id = "${var.name_prefix}-token-key"

  replication {
    auto {}
  }

  depends_on = [google_project_service.apis]
}

resource "google_secret_manager_secret_version" "token_key" {
  secret                 = google_secret_manager_secret.token_key.id
  secret_data_wo         = ephemeral.random_password.token_key.result
  secret_data_wo_version = var.token_key_version
}

resource "google_secret_manager_secret_iam_member" "runtime_token_key" {
  project   = var.project
  secret_id = google_secret_manager_secret.token_key.secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.runtime.member
}

# GOOGLE_API_KEY: the Gemini API key lives in a secret you create and fill
# outside Terraform (the README's Deploy section), so the key is never in Terraform's
# hands. Not used in Vertex AI mode.
resource "google_secret_manager_secret_iam_member" "runtime_gemini_api_key" {
  count = var.use_vertex_ai ? 0 : 1

  project   = var.project
  secret_id = var.gemini_api_key_secret
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.runtime.member

  depends_on = [google_project_service.apis]
}
