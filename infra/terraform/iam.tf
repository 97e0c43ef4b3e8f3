# Three identities, each with only what it needs.

# The functions run as this account: Firestore data access, the two secrets
# (granted on each secret, not project-wide), in Vertex AI mode the model and,
# with check_revoked, users' accounts.
resource "google_service_account" "runtime" {
  project      = var.project
  account_id   = "${var.name_prefix}-run"
  display_name = "Baton functions (runtime)"

  depends_on = [google_project_service.apis]
}

resource "google_project_iam_member" "runtime_firestore" {
  project = var.project
  role    = "roles/datastore.user"
  member  = google_service_account.runtime.member
}

resource "google_project_iam_member" "runtime_trace" {
  count = var.trace_export == "cloudtrace" ? 1 : 0

  project = var.project
  role    = "roles/cloudtrace.agent"
  member  = google_service_account.runtime.member
}

# The console reads operators' and users' accounts and blocks users by a
# custom claim (docs/operator.md); revocation checks and Sweep's check of
# the users that have data (account_check) read accounts too. Admin covers
# all (viewer cannot set claims).
resource "google_project_iam_member" "runtime_firebase_auth" {
  project = var.project
  role    = "roles/firebaseauth.admin"
  member  = google_service_account.runtime.member
}

# Metrics go to Cloud Monitoring (metric_export), which the dashboard and
# the alerts read (monitoring.tf).
resource "google_project_iam_member" "runtime_metrics" {
  count = var.metric_export == "cloudmonitoring" ? 1 : 0

  project = var.project
  role    = "roles/monitoring.metricWriter"
  member  = google_service_account.runtime.member
}

resource "google_project_iam_member" "runtime_vertex" {
  count = var.use_vertex_ai ? 1 : 0

  project = var.project
  role    = "roles/aiplatform.user"
  member  = google_service_account.runtime.member
}

# Cloud Build builds the functions' image as this account instead of the
# project's default build or compute account: it writes build logs here,
# reads the archive from the source bucket and pushes to the images
# repository (both granted on those resources, image.tf).
resource "google_service_account" "build" {
  project      = var.project
  account_id   = "${var.name_prefix}-build"
  display_name = "Baton functions (build)"

  depends_on = [google_project_service.apis]
}

resource "google_project_iam_member" "build" {
  for_each = toset([
    "roles/logging.logWriter",
  ])

  project = var.project
  role    = each.value
  member  = google_service_account.build.member
}

# Cloud Scheduler signs its OIDC token as this account; it may invoke Sweep
# and nothing else (see functions.tf), and Sweep checks the token's email.
resource "google_service_account" "scheduler" {
  project      = var.project
  account_id   = "${var.name_prefix}-scheduler"
  display_name = "Baton Sweep scheduler"

  depends_on = [google_project_service.apis]
}
