# One Cloud Run function (2nd gen) per name registered in functions.Names,
# all built from the same archive, each with its entry point.

locals {
  # A turn or a resume first authenticates, takes the session's lease (maybe
  # waiting for it) and checks the ledger, within the request timeout, then
  # runs the agent for at most the invocation timeout; the margin covers the
  # last ledger writes and the end of the stream.
  invocation_request_timeout = var.request_timeout_seconds + var.invocation_timeout_seconds + 30

  browser = {
    memory      = var.memory
    cpu         = var.cpu
    concurrency = var.concurrency
    min         = var.min_instances
    max         = var.max_instances
  }

  # Keyed by entry point (the name the functions package registers).
  functions = {
    Turn       = merge(local.browser, { timeout = local.invocation_request_timeout, browser = true })
    ToolResult = merge(local.browser, { timeout = local.invocation_request_timeout, browser = true })
    Pending    = merge(local.browser, { timeout = 60, browser = true })
    # A2A callers (users' agents, service accounts) reach it as browsers do;
    # a blocking send or a stream follows one execution, like a turn.
    A2A = merge(local.browser, { timeout = local.invocation_request_timeout, browser = true })
    # useChat's endpoint: POST /Chat runs turns and resumes, GET
    # /Chat/{chatId}/stream follows a running turn (or a live tab's wait).
    Chat = merge(local.browser, { timeout = local.invocation_request_timeout, browser = true })
    # One sweep at a time: a scheduler run that finds Sweep busy is turned
    # away (429) instead of running alongside it.
    Sweep = { memory = "512Mi", cpu = "1", concurrency = 1, min = 0, max = 1, timeout = var.sweep_timeout_seconds, browser = false }
  }

  sweep_name = "${var.name_prefix}-sweep"

  # Sweep's deterministic run.app URL: known before the function exists, so
  # Sweep's own environment can carry it without a dependency cycle.
  sweep_audience = coalesce(var.sweep_audience, "https://${local.sweep_name}-${data.google_project.this.number}.${var.region}.run.app")

  # The audience service callers' OIDC tokens carry for A2A: its
  # deterministic run.app URL, for the same reason.
  a2a_audience = coalesce(var.a2a_audience, "https://${var.name_prefix}-a2a-${data.google_project.this.number}.${var.region}.run.app")

  # Every variable functions.Config reads, except BATON_DEV_IDENTITY and
  # FIREBASE_AUTH_EMULATOR_HOST (local runner and tests only; unset is the
  # only safe value) and K_SERVICE (set by Cloud Run).
  # infra/terraform_test.go checks this against functions.EnvVars.
  config_env = {
    GOOGLE_CLOUD_PROJECT      = var.project
    FIRESTORE_DATABASE        = google_firestore_database.baton.name
    BATON_APP_NAME            = var.app_name
    BATON_ROOT_COLLECTION     = var.root_collection
    BATON_LEASE_POLICY        = var.lease_policy
    BATON_LEASE_MAX_WAIT      = "${var.lease_max_wait_seconds}s"
    BATON_PENDING_POLICY      = var.pending_policy
    BATON_CALL_TIMEOUT        = var.call_timeout
    BATON_INVOCATION_TIMEOUT  = "${var.invocation_timeout_seconds}s"
    BATON_MAX_BODY_BYTES      = tostring(var.max_body_bytes)
    BATON_MAX_CHAT_BODY_BYTES = tostring(var.max_chat_body_bytes)
    BATON_MAX_FILE_BYTES      = tostring(var.max_file_bytes)
    BATON_FILES_BUCKET        = google_storage_bucket.files.name
    BATON_ALLOWED_ORIGINS     = join(",", var.allowed_origins)
    BATON_KEEPALIVE           = var.keepalive
    BATON_REQUEST_TIMEOUT     = "${var.request_timeout_seconds}s"
    BATON_IDLE_RETENTION      = var.idle_retention
    BATON_SWEEP_AUDIENCE      = local.sweep_audience
    BATON_SWEEP_INVOKER       = google_service_account.scheduler.email
    BATON_A2A_AUDIENCE        = local.a2a_audience
    BATON_A2A_INVOKERS        = join(",", var.a2a_invokers)
    BATON_A2A_PUSH_ALLOW      = join(",", var.a2a_push_allow)
    BATON_TRACE_EXPORT        = var.trace_export
    BATON_CHECK_REVOKED       = tostring(var.check_revoked)

    BATON_USER_TURNS_PER_MINUTE      = tostring(var.user_turns_per_minute)
    BATON_CHAT_TURNS_PER_MINUTE      = tostring(var.chat_turns_per_minute)
    BATON_ANON_USER_TURNS_PER_MINUTE = tostring(var.anon_user_turns_per_minute)
    BATON_SERVICE_TURNS_PER_MINUTE   = tostring(var.service_turns_per_minute)
    BATON_USER_TOKENS_PER_DAY        = format("%d", var.user_tokens_per_day)
    BATON_ANON_USER_TOKENS_PER_DAY   = format("%d", var.anon_user_tokens_per_day)
    BATON_SERVICE_TOKENS_PER_DAY     = format("%d", var.service_tokens_per_day)
  }

  # Vertex AI mode, read by the genai client itself (GOOGLE_CLOUD_PROJECT
  # is already set above).
  vertex_env = {
    for k, v in {
      GOOGLE_GENAI_USE_VERTEXAI = "true"
      GOOGLE_CLOUD_LOCATION     = coalesce(var.vertex_location, var.region)
    } : k => v if var.use_vertex_ai
  }

  env = merge(local.config_env, local.vertex_env)

  # Secret Manager references: env var => {secret id, version}.
  secret_env = merge(
    {
      BATON_TOKEN_KEY = {
        secret = google_secret_manager_secret.token_key.secret_id
        # Pinned, so a rotation redeploys every function at once.
        version = google_secret_manager_secret_version.token_key.version
      }
    },
    {
      for k, v in {
        GOOGLE_API_KEY = { secret = var.gemini_api_key_secret, version = "latest" }
      } : k => v if !var.use_vertex_ai
    },
  )
}

resource "google_cloudfunctions2_function" "fn" {
  for_each = local.functions

  project     = var.project
  location    = var.region
  name        = "${var.name_prefix}-${lower(each.key)}"
  description = "Baton ${each.key}"

  build_config {
    runtime         = "go126"
    entry_point     = each.key
    service_account = google_service_account.build.id

    source {
      storage_source {
        bucket = google_storage_bucket.source.name
        object = google_storage_bucket_object.source.name
      }
    }
  }

  service_config {
    service_account_email            = google_service_account.runtime.email
    available_memory                 = each.value.memory
    available_cpu                    = each.value.cpu
    max_instance_request_concurrency = each.value.concurrency
    min_instance_count               = each.value.min
    max_instance_count               = each.value.max
    timeout_seconds                  = each.value.timeout
    # Browsers call Turn, ToolResult and Pending directly; Cloud Scheduler
    # is outside any VPC. Access is decided by IAM below and by the
    # functions' own token checks.
    ingress_settings               = "ALLOW_ALL"
    all_traffic_on_latest_revision = true

    environment_variables = local.env

    dynamic "secret_environment_variables" {
      for_each = local.secret_env
      content {
        key        = secret_environment_variables.key
        project_id = var.project
        secret     = secret_environment_variables.value.secret
        version    = secret_environment_variables.value.version
      }
    }
  }

  depends_on = [
    google_project_iam_member.build,
    google_project_iam_member.runtime_firestore,
    google_project_iam_member.runtime_vertex,
    google_secret_manager_secret_iam_member.runtime_token_key,
    google_secret_manager_secret_iam_member.runtime_gemini_api_key,
  ]
}

# Invoker access is granted on the underlying Cloud Run services, not on
# the function resources.

# Browser-facing functions and A2A: var.invokers (allUsers by default; the
# functions verify the caller's token themselves).
resource "google_cloud_run_service_iam_member" "browser_invoker" {
  for_each = {
    for pair in setproduct([for name, f in local.functions : name if f.browser], var.invokers) :
    "${pair[0]} ${pair[1]}" => { function = pair[0], member = pair[1] }
  }

  project  = var.project
  location = var.region
  service  = google_cloudfunctions2_function.fn[each.value.function].service_config[0].service
  role     = "roles/run.invoker"
  member   = each.value.member
}

# Sweep: only the scheduler's service account.
resource "google_cloud_run_service_iam_member" "sweep_invoker" {
  project  = var.project
  location = var.region
  service  = google_cloudfunctions2_function.fn["Sweep"].service_config[0].service
  role     = "roles/run.invoker"
  member   = google_service_account.scheduler.member
}
