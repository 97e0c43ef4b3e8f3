# Background tools (docs/background.md): a model's call of a background
# tool is a task in this Cloud Tasks queue, which delivers it to the Work
# function with an OIDC token of the tasks service account; Work runs the
# tool and resumes the agent with its result. Work refuses every other
# caller: Cloud Run lets only that account invoke it, and Work checks the
# token's audience and email again.

locals {
  work_queue_name = "${var.name_prefix}-work"
  # The queue's full name, known before apply (the functions' environment
  # carries it; the services depend on the queue below).
  work_queue = "projects/${var.project}/locations/${var.region}/queues/${local.work_queue_name}"
  work_name  = "${var.name_prefix}-work"
  # Work's deterministic run.app URL, where the queue delivers and the
  # audience of its tokens: known before Work exists, as Sweep's is.
  work_url = "https://${local.work_name}-${data.google_project.this.number}.${var.region}.run.app"
}

resource "google_cloud_tasks_queue" "work" {
  project  = var.project
  location = var.region
  name     = local.work_queue_name

  # How fast deliveries start, and how many run at once: the bound on the
  # Work instances' load, whatever the users do.
  rate_limits {
    max_dispatches_per_second = var.work_dispatches_per_second
    max_concurrent_dispatches = var.work_concurrent_dispatches
  }

  # A failed delivery (a tool's retryable error, a worker that died, a
  # duplicate turned away while the first attempt runs) is retried with
  # exponential backoff; max_attempts bounds them. A tool's own bound
  # (toolcallback.BackgroundConfig.MaxAttempts, 3 by default) must fit
  # within it, with room for the deliveries turned away while an attempt
  # holds the call.
  retry_config {
    max_attempts  = var.work_max_attempts
    min_backoff   = "${var.work_min_backoff_seconds}s"
    max_backoff   = "${var.work_max_backoff_seconds}s"
    max_doublings = 5
  }

  depends_on = [google_project_service.apis]
}

# Cloud Tasks signs each delivery's OIDC token as this account; it may
# invoke Work and nothing else.
resource "google_service_account" "tasks" {
  project      = var.project
  account_id   = "${var.name_prefix}-tasks"
  display_name = "Baton Work deliveries (Cloud Tasks)"

  depends_on = [google_project_service.apis]
}

# The functions create a call's task (and delete it when the call is
# cancelled first), on this queue only.
resource "google_cloud_tasks_queue_iam_member" "runtime" {
  for_each = toset(["roles/cloudtasks.enqueuer", "roles/cloudtasks.taskDeleter"])

  # The queue's name, known before apply; granted once the queue exists.
  depends_on = [google_cloud_tasks_queue.work]

  project  = var.project
  location = var.region
  name     = local.work_queue_name
  role     = each.value
  member   = google_service_account.runtime.member
}

# A task that asks for an OIDC token of an account may be created only by
# a caller that may act as that account: the functions, as the tasks one.
resource "google_service_account_iam_member" "runtime_acts_as_tasks" {
  service_account_id = google_service_account.tasks.name
  role               = "roles/iam.serviceAccountUser"
  member             = google_service_account.runtime.member
}

# Work: only the tasks account.
resource "google_cloud_run_v2_service_iam_member" "work_invoker" {
  project  = var.project
  location = var.region
  name     = google_cloud_run_v2_service.fn["Work"].name
  role     = "roles/run.invoker"
  member   = google_service_account.tasks.member
}
