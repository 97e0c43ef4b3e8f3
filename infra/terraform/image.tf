# The image every function runs: built once per archive by Cloud Build with
# Google's buildpacks for Go functions (the builder Cloud Run functions use),
# pushed to a repository of this deployment, tagged with the archive's
# SHA-256. A code change is a new archive, so a new tag, so a new build and
# a new revision of every service; an unchanged archive builds nothing.
#
# google_cloud_run_v2_service's build_config starts no build, so the build
# is a step of its own. The buildpack generates a main that serves the
# function named by FUNCTION_TARGET; GOOGLE_FUNCTION_TARGET at build time
# only opts into that buildpack and sets the image's default, which each
# service overrides with its own entry point (functions.tf).

resource "google_artifact_registry_repository" "images" {
  project       = var.project
  location      = var.region
  repository_id = "${var.name_prefix}-images"
  format        = "DOCKER"
  description   = "Baton functions, one image per deployed archive"

  depends_on = [google_project_service.apis]
}

locals {
  image = "${var.region}-docker.pkg.dev/${var.project}/${google_artifact_registry_repository.images.repository_id}/functions:${filesha256(var.source_archive)}"

  # Any registered entry point: it only selects the functions buildpack.
  build_target = "Chat"
}

resource "terraform_data" "image" {
  # Known at plan: services that use the output change with it.
  input = local.image

  # A new tag (a new archive) or another builder builds again.
  triggers_replace = [local.image, var.buildpacks_builder, var.go_version]

  provisioner "local-exec" {
    command = "gcloud builds submit \"$SOURCE\" --project=\"$PROJECT\" --region=\"$REGION\" --config=\"$CONFIG\" --service-account=\"$BUILD_ACCOUNT\" --substitutions=\"_IMAGE=$IMAGE,_BUILDER=$BUILDER,_TARGET=$TARGET,_GO_VERSION=$GO_VERSION\""
    environment = {
      SOURCE        = "gs://${google_storage_bucket.source.name}/${google_storage_bucket_object.source.name}"
      PROJECT       = var.project
      REGION        = var.region
      CONFIG        = "${path.module}/cloudbuild.yaml"
      BUILD_ACCOUNT = google_service_account.build.id
      IMAGE         = local.image
      BUILDER       = var.buildpacks_builder
      TARGET        = local.build_target
      GO_VERSION    = var.go_version
    }
  }

  depends_on = [
    google_project_iam_member.build,
    google_artifact_registry_repository_iam_member.build,
    google_storage_bucket_iam_member.build_source,
  ]
}

# The build account pushes to this repository only.
resource "google_artifact_registry_repository_iam_member" "build" {
  project    = var.project
  location   = var.region
  repository = google_artifact_registry_repository.images.name
  role       = "roles/artifactregistry.writer"
  member     = google_service_account.build.member
}

# And reads the archive it builds from.
resource "google_storage_bucket_iam_member" "build_source" {
  bucket = google_storage_bucket.source.name
  role   = "roles/storage.objectViewer"
  member = google_service_account.build.member
}
