# Sweep expires overdue calls and resumes settled ones. Cloud Scheduler
# POSTs to it with an OIDC token signed as the scheduler's service account
# and addressed to Sweep's URL; Cloud Run checks the token for invoker
# access and Sweep checks its audience and email again.
resource "google_cloud_scheduler_job" "sweep" {
  project          = var.project
  region           = var.region
  name             = local.sweep_name
  description      = "Expire overdue Baton calls and resume settled ones"
  schedule         = var.sweep_schedule
  time_zone        = "Etc/UTC"
  attempt_deadline = "${var.sweep_timeout_seconds}s"

  # The next run comes soon enough; a retry would only overlap it.
  retry_config {
    retry_count = 0
  }

  http_target {
    http_method = "POST"
    uri         = google_cloud_run_v2_service.fn["Sweep"].uri

    oidc_token {
      service_account_email = google_service_account.scheduler.email
      audience              = local.sweep_audience
    }
  }

  depends_on = [google_cloud_run_v2_service_iam_member.sweep_invoker]
}
