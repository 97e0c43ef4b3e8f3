# One Cloud Run service per name registered in functions.Names. All seven run
# the same image, built once from the upload archive (image.tf); each picks
# its entry point with FUNCTION_TARGET, which functions-framework-go reads
# at start to serve that one function at every path. The services that
# serve a chat's turns turn on session affinity, so that a chat's next
# request tends to reach the instance that holds its session
# (docs/deployment.md, "Session affinity").

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
  # affinity: the function serves a chat's turns or reads its session, so a
  # client's next request should find the instance that served its last.
  functions = {
    Turn       = merge(local.browser, { timeout = local.invocation_request_timeout, browser = true, affinity = true })
    ToolResult = merge(local.browser, { timeout = local.invocation_request_timeout, browser = true, affinity = true })
    Pending    = merge(local.browser, { timeout = 60, browser = true, affinity = true })
    # A2A callers (users' agents, service accounts) reach it as browsers do;
    # a blocking send or a stream follows one execution, like a turn.
    A2A = merge(local.browser, { timeout = local.invocation_request_timeout, browser = true, affinity = true })
    # useChat's endpoint: POST /Chat runs turns and resumes, GET
    # /Chat/{chatId}/stream follows a running turn (or a live tab's wait),
    # GET /Chat/{chatId}/live holds a live conversation's WebSocket, which
    # Cloud Run keeps for at most the request timeout: the longer of the
    # two (docs/deployment.md, "Live mode").
    Chat = merge(local.browser, { timeout = max(local.invocation_request_timeout, var.live_timeout_seconds), browser = true, affinity = true })
    # A person's data as a whole: the export streams every chat and file,
    # the deletion takes every chat apart, so both get a turn's time; they
    # read no chat's warm session, so affinity would do nothing.
    Account = merge(local.browser, { timeout = local.invocation_request_timeout, browser = true, affinity = false })
    # The operator's console: its page and API (docs/operator.md). An
    # operator's answer waits for the resumed agent, like a resume.
    Admin = merge(local.browser, { timeout = local.invocation_request_timeout, browser = true, affinity = false })
    # One sweep at a time: a scheduler run that finds Sweep busy is turned
    # away (429) instead of running alongside it. The scheduler has no
    # cookie jar: affinity would do nothing.
    Sweep = { memory = "512Mi", cpu = "1", concurrency = 1, min = 0, max = 1, timeout = var.sweep_timeout_seconds, browser = false, affinity = false }
    # Background calls' work (work.tf), from Cloud Tasks only: a request
    # lasts the tool's run and the resumed agent's, within the queue's
    # dispatch deadline, which its timeout outlasts.
    Work = { memory = var.memory, cpu = var.cpu, concurrency = var.work_concurrency, min = 0, max = var.work_max_instances,
    timeout = var.work_deadline_seconds + 60, browser = false, affinity = false }
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
    BATON_ACCOUNT_CHECK       = var.account_check
    BATON_TITLE_MODEL         = var.title_model
    BATON_SWEEP_AUDIENCE      = local.sweep_audience
    BATON_SWEEP_INVOKER       = google_service_account.scheduler.email
    BATON_A2A_AUDIENCE        = local.a2a_audience
    BATON_A2A_INVOKERS        = join(",", var.a2a_invokers)
    BATON_A2A_PUSH_ALLOW      = join(",", var.a2a_push_allow)
    BATON_REMOTE_PUSH_URL     = "https://${var.name_prefix}-a2a-${data.google_project.this.number}.${var.region}.run.app/remote-push"
    BATON_TRACE_EXPORT        = var.trace_export
    BATON_CHECK_REVOKED       = tostring(var.check_revoked)
    BATON_WORK_QUEUE          = local.work_queue
    BATON_WORK_URL            = local.work_url
    BATON_WORK_AUDIENCE       = local.work_url
    BATON_WORK_INVOKER        = google_service_account.tasks.email
    BATON_WORK_DEADLINE       = "${var.work_deadline_seconds}s"
    BATON_BACKGROUND_PER_USER = format("%d", var.background_per_user)
    BATON_INCLUDE_THOUGHTS    = tostring(var.include_thoughts)

    BATON_USER_TURNS_PER_MINUTE      = tostring(var.user_turns_per_minute)
    BATON_CHAT_TURNS_PER_MINUTE      = tostring(var.chat_turns_per_minute)
    BATON_ANON_USER_TURNS_PER_MINUTE = tostring(var.anon_user_turns_per_minute)
    BATON_SERVICE_TURNS_PER_MINUTE   = tostring(var.service_turns_per_minute)
    BATON_USER_TOKENS_PER_DAY        = format("%d", var.user_tokens_per_day)
    BATON_ANON_USER_TOKENS_PER_DAY   = format("%d", var.anon_user_tokens_per_day)
    BATON_SERVICE_TOKENS_PER_DAY     = format("%d", var.service_tokens_per_day)

    BATON_LIVE_SEGMENTS_PER_USER = format("%d", var.live_segments_per_user)
    BATON_SERVICE_TOKENS_CAP     = format("%d", var.service_tokens_cap)
    BATON_NEW_ANONYMOUS_PER_DAY  = format("%d", var.new_anonymous_per_day)

    BATON_OPERATORS        = join(",", var.operators)
    BATON_OPERATOR_CLAIM   = var.operator_claim
    BATON_FIREBASE_API_KEY = var.firebase_api_key
    BATON_METRIC_EXPORT    = var.metric_export

    BATON_LIVE_MODEL = coalesce(var.live_model, "gemini-3.8-live")
    # On Vertex AI, Live models are served from regions, not from global.
    BATON_LIVE_LOCATION = var.use_vertex_ai ? coalesce(var.vertex_live_location, var.region) : ""
    # A conversation ends before Cloud Run cuts its socket.
    BATON_LIVE_TIMEOUT = "${var.live_timeout_seconds - 60}s"
  }

  # Vertex AI mode, read by the genai client itself (GOOGLE_CLOUD_PROJECT
  # is already set above).
  vertex_env = {
    for k, v in {
      GOOGLE_GENAI_USE_VERTEXAI = "true"
      GOOGLE_CLOUD_LOCATION     = coalesce(var.vertex_location, "global")
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

resource "google_cloud_run_v2_service" "fn" {
  for_each = local.functions

  project     = var.project
  location    = var.region
  name        = "${var.name_prefix}-${lower(each.key)}"
  description = "Baton ${each.key}"

  # Browsers call the browser-facing functions directly; Cloud Scheduler is
  # outside any VPC. Access is decided by IAM below and by the functions'
  # own token checks.
  ingress = "INGRESS_TRAFFIC_ALL"

  # terraform destroy removes the services (the provider protects them by
  # default); nothing is stored in them.
  deletion_protection = false

  # What the image was built from, for the console's function view. It
  # starts no build: image.tf builds the image (terraform-provider-google
  # issues 22263 and 23057).
  build_config {
    source_location = "gs://${google_storage_bucket.source.name}/${google_storage_bucket_object.source.name}"
    function_target = each.key
    image_uri       = terraform_data.image.output
    service_account = google_service_account.build.id
  }

  template {
    service_account                  = google_service_account.runtime.email
    timeout                          = "${each.value.timeout}s"
    max_instance_request_concurrency = each.value.concurrency
    session_affinity                 = each.value.affinity

    scaling {
      min_instance_count = each.value.min
      max_instance_count = each.value.max
    }

    containers {
      # The same image in every service; a new archive is a new tag, so a
      # code change rolls out a new revision of each.
      image = terraform_data.image.output

      resources {
        limits = {
          cpu    = each.value.cpu
          memory = each.value.memory
        }
        # CPU only while a request is served, billed per request, as Cloud
        # Run functions are.
        cpu_idle = true
      }

      # The entry point this service serves (functions-framework-go).
      env {
        name  = "FUNCTION_TARGET"
        value = each.key
      }

      dynamic "env" {
        for_each = local.env
        content {
          name  = env.key
          value = env.value
        }
      }

      dynamic "env" {
        for_each = local.secret_env
        content {
          name = env.key
          value_source {
            secret_key_ref {
              secret  = env.value.secret
              version = env.value.version
            }
          }
        }
      }
    }
  }

  traffic {
    type    = "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST"
    percent = 100
  }

  depends_on = [
    google_cloud_tasks_queue_iam_member.runtime,
    google_service_account_iam_member.runtime_acts_as_tasks,
    google_project_iam_member.runtime_firestore,
    google_project_iam_member.runtime_vertex,
    google_secret_manager_secret_iam_member.runtime_token_key,
    google_secret_manager_secret_iam_member.runtime_gemini_api_key,
  ]
}

# Browser-facing functions and A2A: var.invokers (allUsers by default; the
# functions verify the caller's token themselves).
resource "google_cloud_run_v2_service_iam_member" "browser_invoker" {
  for_each = {
    for pair in setproduct([for name, f in local.functions : name if f.browser], var.invokers) :
    "${pair[0]} ${pair[1]}" => { function = pair[0], member = pair[1] }
  }

  project  = var.project
  location = var.region
  name     = google_cloud_run_v2_service.fn[each.value.function].name
  role     = "roles/run.invoker"
  member   = each.value.member
}

# Sweep: only the scheduler's service account.
resource "google_cloud_run_v2_service_iam_member" "sweep_invoker" {
  project  = var.project
  location = var.region
  name     = google_cloud_run_v2_service.fn["Sweep"].name
  role     = "roles/run.invoker"
  member   = google_service_account.scheduler.member
}
