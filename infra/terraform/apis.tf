locals {
  apis = concat([
    "artifactregistry.googleapis.com", # the functions' image
    "cloudbuild.googleapis.com",       # builds it from the archive
    "cloudscheduler.googleapis.com",   # the Sweep job
    "cloudtasks.googleapis.com",       # the background calls' queue
    "firestore.googleapis.com",
    "iam.googleapis.com",
    "logging.googleapis.com",
    "run.googleapis.com", # the functions' services
    "secretmanager.googleapis.com",
    "storage.googleapis.com", # the source bucket
    ],
    var.use_vertex_ai ? ["aiplatform.googleapis.com"] : [],
    var.trace_export == "cloudtrace" ? ["cloudtrace.googleapis.com"] : [],
    ["identitytoolkit.googleapis.com"], # the console's users; revocation checks
    var.metric_export == "cloudmonitoring" ? ["monitoring.googleapis.com"] : [],
  )
}

resource "google_project_service" "apis" {
  for_each = toset(local.apis)

  project = var.project
  service = each.value

  # Other things in the project may use these APIs too.
  disable_on_destroy = false
}

# The project number names Sweep's deterministic URL (see local.sweep_audience).
data "google_project" "this" {
  project_id = var.project
}
