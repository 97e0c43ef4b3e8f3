# The upload: one archive backs every function (each picks its entry point).
# The object's name carries the archive's SHA-256, so any code change is a
# new object, a new image (image.tf) and a new revision of every function.

resource "google_storage_bucket" "source" {
  project                     = var.project
  name                        = "${var.project}-${var.name_prefix}-source"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  # Only build inputs live here; let `terraform destroy` remove them.
  force_destroy = true

  depends_on = [google_project_service.apis]
}

resource "google_storage_bucket_object" "source" {
  bucket = google_storage_bucket.source.name
  name   = "${var.name_prefix}-${filesha256(var.source_archive)}.zip"
  source = var.source_archive
}
