# Chats' files (BATON_FILES_BUCKET): what users attach to messages, stored
# through ADK's artifact service (gcsartifact) under
# <app>/<user>/<chat>/<file>/<version>, referenced from the session, never
# inline in Firestore. Pages show them through the URLs GET /Chat/{id}
# gives, which Chat serves itself (an HMAC under a key derived from
# BATON_TOKEN_KEY, expiring after an hour); the bucket is never public.
resource "google_storage_bucket" "files" {
  project                     = var.project
  name                        = "${var.project}-${var.name_prefix}-files"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  # Sweep deletes a chat's files with the chat, once it has been idle for
  # idle_retention. No lifecycle rule deletes by age: it would delete the
  # older files of a chat still in use (docs/files-and-long-chats.md).

  # A deleted chat's files are gone at once, not kept recoverable (and
  # billed) for the 7 days of Cloud Storage's default soft delete.
  soft_delete_policy {
    retention_duration_seconds = 0
  }

  depends_on = [google_project_service.apis]
}

# The functions read, write and delete chats' files, and nothing else in
# the project's storage.
resource "google_storage_bucket_iam_member" "files_runtime" {
  bucket = google_storage_bucket.files.name
  role   = "roles/storage.objectAdmin"
  member = google_service_account.runtime.member
}
