# Chats' files (BATON_FILES_BUCKET): what users attach to messages, stored
# through ADK's artifact service (gcsartifact) under
# <app>/<user>/<chat>/<file>/<version>, referenced from the session, never
# inline in Firestore. Pages read them through Chat's short-lived signed
# URLs (signed with BATON_TOKEN_KEY); the bucket itself is never public.
resource "google_storage_bucket" "files" {
  project                     = var.project
  name                        = "${var.project}-${var.name_prefix}-files"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  # Sweep deletes a chat's files with the chat (idle_retention); this rule
  # only collects what a crash left behind, a day after the chat could
  # last have been used, as Firestore's TTL does for documents.
  lifecycle_rule {
    condition {
      age = local.files_max_age_days
    }
    action {
      type = "Delete"
    }
  }

  depends_on = [google_project_service.apis]
}

locals {
  # idle_retention in whole days, rounded up, plus one.
  files_max_age_days = ceil(
    tonumber(regex("^[0-9]+", var.idle_retention)) * lookup({ h = 3600, m = 60, s = 1 }, regex("[hms]$", var.idle_retention), 1) / 86400
  ) + 1
}

# The functions read, write and delete chats' files, and nothing else in
# the project's storage.
resource "google_storage_bucket_iam_member" "files_runtime" {
  bucket = google_storage_bucket.files.name
  role   = "roles/storage.objectAdmin"
  member = google_service_account.runtime.member
}
