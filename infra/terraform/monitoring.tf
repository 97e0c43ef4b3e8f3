# The operator's dashboard and alert policies (docs/operator.md, "Metrics"
# and "Alerts"), on the metrics the functions export to Cloud Monitoring
# (metric_export = cloudmonitoring): Google's exporter for OpenTelemetry
# names each workload.googleapis.com/<instrument>, and turns attribute
# keys' dots into underscores in label names. infra/monitoring_test.go
# holds every metric named here to one the code records.

locals {
  metric = { for name in [
    "baton.requests",
    "http.server.request.duration",
    "baton.invocations",
    "baton.invocation.first_event.duration",
    "gen_ai.client.token.usage",
    "baton.calls.paused",
    "baton.calls.resumed",
    "baton.answers.duplicate",
    "baton.lease.takeovers",
    "baton.live.segments",
    "baton.live.reconnects",
    "baton.limits.refused",
    "baton.sweep.runs",
    "baton.sweep.expired",
    "baton.calls.overdue",
  ] : name => "metric.type=\"workload.googleapis.com/${name}\"" }

  # A chart of one metric: a rate (counters), or a percentile
  # (distributions), grouped by labels.
  chart = {
    "Requests by function and status class" = { metric = "baton.requests", aligner = "ALIGN_RATE", reducer = "REDUCE_SUM", by = ["metric.label.baton_function", "metric.label.baton_status_class"] }
    "Request latency p95 by function"       = { metric = "http.server.request.duration", aligner = "ALIGN_DELTA", reducer = "REDUCE_PERCENTILE_95", by = ["metric.label.baton_function"] }
    "Invocations by agent"                  = { metric = "baton.invocations", aligner = "ALIGN_RATE", reducer = "REDUCE_SUM", by = ["metric.label.gen_ai_agent_name", "metric.label.baton_invocation"] }
    "First event p95 by agent"              = { metric = "baton.invocation.first_event.duration", aligner = "ALIGN_DELTA", reducer = "REDUCE_PERCENTILE_95", by = ["metric.label.gen_ai_agent_name"] }
    "Model tokens by type"                  = { metric = "gen_ai.client.token.usage", aligner = "ALIGN_DELTA", reducer = "REDUCE_SUM", by = ["metric.label.gen_ai_token_type", "metric.label.gen_ai_response_model"] }
    "Calls paused by kind"                  = { metric = "baton.calls.paused", aligner = "ALIGN_RATE", reducer = "REDUCE_SUM", by = ["metric.label.baton_call_kind"] }
    "Calls resumed by kind"                 = { metric = "baton.calls.resumed", aligner = "ALIGN_RATE", reducer = "REDUCE_SUM", by = ["metric.label.baton_call_kind"] }
    "Answers refused as duplicates"         = { metric = "baton.answers.duplicate", aligner = "ALIGN_RATE", reducer = "REDUCE_SUM", by = ["metric.label.baton_call_kind"] }
    "Lease takeovers"                       = { metric = "baton.lease.takeovers", aligner = "ALIGN_RATE", reducer = "REDUCE_SUM", by = ["metric.label.baton_takeover"] }
    "Live segments opened"                  = { metric = "baton.live.segments", aligner = "ALIGN_RATE", reducer = "REDUCE_SUM", by = ["metric.label.gen_ai_agent_name"] }
    "Live reconnects"                       = { metric = "baton.live.reconnects", aligner = "ALIGN_RATE", reducer = "REDUCE_SUM", by = [] }
    "Limits refusing"                       = { metric = "baton.limits.refused", aligner = "ALIGN_RATE", reducer = "REDUCE_SUM", by = ["metric.label.baton_limit"] }
    "Sweep runs"                            = { metric = "baton.sweep.runs", aligner = "ALIGN_RATE", reducer = "REDUCE_SUM", by = [] }
    "Calls the sweep expired"               = { metric = "baton.sweep.expired", aligner = "ALIGN_RATE", reducer = "REDUCE_SUM", by = [] }
    "Calls overdue at the last sweep"       = { metric = "baton.calls.overdue", aligner = "ALIGN_MAX", reducer = "REDUCE_MAX", by = [] }
  }
}

resource "google_monitoring_dashboard" "baton" {
  count = var.metric_export == "cloudmonitoring" ? 1 : 0

  project = var.project
  dashboard_json = jsonencode({
    displayName = "Baton (${var.name_prefix})"
    mosaicLayout = {
      columns = 12
      tiles = [for i, title in sort(keys(local.chart)) : {
        xPos   = (i % 2) * 6
        yPos   = floor(i / 2) * 4
        width  = 6
        height = 4
        widget = {
          title = title
          xyChart = {
            dataSets = [{
              plotType = "LINE"
              timeSeriesQuery = {
                timeSeriesFilter = {
                  filter = local.metric[local.chart[title].metric]
                  aggregation = {
                    alignmentPeriod    = "60s"
                    perSeriesAligner   = local.chart[title].aligner
                    crossSeriesReducer = local.chart[title].reducer
                    groupByFields      = local.chart[title].by
                  }
                }
              }
            }]
          }
        }
      }]
    }
  })

  depends_on = [google_project_service.apis]
}

# More than alert_5xx_ratio of a function's requests answered 5xx over
# five minutes.
resource "google_monitoring_alert_policy" "errors_5xx" {
  count = var.metric_export == "cloudmonitoring" ? 1 : 0

  project               = var.project
  display_name          = "Baton: 5xx rate by function"
  combiner              = "OR"
  notification_channels = var.notification_channels

  documentation {
    content   = "More than ${var.alert_5xx_ratio * 100}% of a function's requests failed with a 5xx for five minutes. See docs/operator.md, \"When an alert fires\": the function's logs (severity ERROR, \"request failed\") say why."
    mime_type = "text/markdown"
  }

  conditions {
    display_name = "5xx share of requests above ${var.alert_5xx_ratio}"
    condition_threshold {
      filter             = "${local.metric["baton.requests"]} AND metric.label.baton_status_class=\"5xx\""
      denominator_filter = local.metric["baton.requests"]
      comparison         = "COMPARISON_GT"
      threshold_value    = var.alert_5xx_ratio
      duration           = "300s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_RATE"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.baton_function"]
      }
      denominator_aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_RATE"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.baton_function"]
      }
    }
  }

  depends_on = [google_project_service.apis]
}

# Calls waiting past their due time that no sweep closed (the console's
# stuck calls).
resource "google_monitoring_alert_policy" "overdue_calls" {
  count = var.metric_export == "cloudmonitoring" ? 1 : 0

  project               = var.project
  display_name          = "Baton: calls waiting past their due time"
  combiner              = "OR"
  notification_channels = var.notification_channels

  documentation {
    content   = "Sweeps keep finding calls due for more than five minutes. Open the console's stuck calls (docs/operator.md, \"When an alert fires\")."
    mime_type = "text/markdown"
  }

  conditions {
    display_name = "overdue calls above ${var.alert_overdue_calls} for 10 minutes"
    condition_threshold {
      filter          = local.metric["baton.calls.overdue"]
      comparison      = "COMPARISON_GT"
      threshold_value = var.alert_overdue_calls
      duration        = "600s"
      aggregations {
        alignment_period     = "60s"
        per_series_aligner   = "ALIGN_MAX"
        cross_series_reducer = "REDUCE_MAX"
      }
    }
  }

  depends_on = [google_project_service.apis]
}

# No sweep for two periods of the schedule.
resource "google_monitoring_alert_policy" "no_sweep" {
  count = var.metric_export == "cloudmonitoring" ? 1 : 0

  project               = var.project
  display_name          = "Baton: no sweep run"
  combiner              = "OR"
  notification_channels = var.notification_channels

  documentation {
    content   = "No sweep has run for ${var.alert_sweep_absent_seconds} s: paused calls are not expiring. Check the Cloud Scheduler job and the Sweep service (docs/operator.md, \"When an alert fires\")."
    mime_type = "text/markdown"
  }

  conditions {
    display_name = "baton.sweep.runs absent for ${var.alert_sweep_absent_seconds} s"
    condition_absent {
      filter   = local.metric["baton.sweep.runs"]
      duration = "${var.alert_sweep_absent_seconds}s"
      aggregations {
        alignment_period     = "60s"
        per_series_aligner   = "ALIGN_RATE"
        cross_series_reducer = "REDUCE_SUM"
      }
    }
  }

  depends_on = [google_project_service.apis]
}

# A spike of turns refused for budgets and caps.
resource "google_monitoring_alert_policy" "budget_exhaustion" {
  count = var.metric_export == "cloudmonitoring" ? 1 : 0

  project               = var.project
  display_name          = "Baton: budget exhaustion spike"
  combiner              = "OR"
  notification_channels = var.notification_channels

  documentation {
    content   = "More than ${var.alert_refusals_per_minute} turns a minute are refused for a token budget or one of the deployment's caps. The console's overview shows the caps against the day's use (docs/operator.md, \"When an alert fires\")."
    mime_type = "text/markdown"
  }

  conditions {
    display_name = "budget and cap refusals above ${var.alert_refusals_per_minute} a minute"
    condition_threshold {
      filter          = "${local.metric["baton.limits.refused"]} AND metric.label.baton_limit=one_of(\"user_budget\", \"service_tokens\", \"new_anonymous\")"
      comparison      = "COMPARISON_GT"
      threshold_value = var.alert_refusals_per_minute / 60
      duration        = "300s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_RATE"
        cross_series_reducer = "REDUCE_SUM"
      }
    }
  }

  depends_on = [google_project_service.apis]
}
