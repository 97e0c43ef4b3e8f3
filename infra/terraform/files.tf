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
  # idle_retention. This rule collects what Sweep never sees (the file of a
  # first message whose chat was never created) a day after that. It goes
  # by the object's age: a file older than idle_retention plus a day is
  # deleted even in a chat still in use; the model is then told the file
  # is no longer stored, and the page's link fetches nothing.
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
