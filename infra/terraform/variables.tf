# ---- where -------------------------------------------------------------------

variable "project" {
  description = "Google Cloud project id to deploy into. It must have billing enabled and, for Firebase Auth ID tokens, be (or belong to) the Firebase project whose users call the functions: the functions check the token's audience against this id."
  type        = string
}

variable "region" {
  description = "Region of the functions, the source bucket and the scheduler job."
  type        = string
  default     = "us-central1"
}

variable "name_prefix" {
  description = "Prefix of every named resource (functions, service accounts, secrets, bucket), so two deployments can share a project."
  type        = string
  default     = "baton"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,18}[a-z0-9]$", var.name_prefix))
    error_message = "name_prefix: 2 to 20 lower-case letters, digits or hyphens, starting with a letter (service account ids are limited to 30 characters)."
  }
}

# ---- Firestore ---------------------------------------------------------------

variable "firestore_database" {
  description = "Firestore database id. \"(default)\" gets Firestore's free daily quota; if the project already has a (default) database, import it (see the README's Deploy section) or pick another id such as \"baton\"."
  type        = string
  default     = "(default)"
}

variable "firestore_location" {
  description = "Firestore location: a region (e.g. us-central1, cheapest, next to the functions) or a multi-region (nam5, eur3: higher availability, about twice the per-operation price). Null means var.region. Cannot be changed after creation."
  type        = string
  default     = null
}

variable "firestore_delete_on_destroy" {
  description = "When true, `terraform destroy` deletes the Firestore database and all sessions in it. When false (default) the database is protected and abandoned on destroy."
  type        = bool
  default     = false
}

# ---- the model -----------------------------------------------------------------

variable "use_vertex_ai" {
  description = "Call Gemini through Vertex AI with the functions' service account (no API key). When false, the Gemini API key is read from the Secret Manager secret gemini_api_key_secret."
  type        = bool
  default     = false
}

variable "gemini_api_key_secret" {
  description = "Id of an existing Secret Manager secret (in var.project) whose latest version is the Gemini API key; create it before applying (the README's Deploy section). Ignored when use_vertex_ai is true."
  type        = string
  default     = "gemini-api-key"
}

variable "vertex_location" {
  description = "Vertex AI location for the agents' model (GOOGLE_CLOUD_LOCATION), e.g. \"global\" or a region. Null means global, where Vertex AI serves Gemini 3 text models (docs/configuration.md). Used only when use_vertex_ai is true."
  type        = string
  default     = null
}

variable "vertex_live_location" {
  description = "Vertex AI location for the live model (BATON_LIVE_LOCATION): Live models are served from regions, not from global. Null means var.region. Used only when use_vertex_ai is true."
  type        = string
  default     = null
}

# ---- who may call --------------------------------------------------------------

variable "invokers" {
  description = "Principals granted roles/run.invoker on the browser-facing functions (Turn, ToolResult, Pending) and A2A. The default, allUsers, lets browsers reach them: the functions themselves reject any request without a valid Firebase ID token, but Cloud Run then bills and serves unauthenticated requests up to that check. Restrict it (e.g. to the service account of an API gateway or load balancer in front) if that is not acceptable, or if an organization policy forbids allUsers. Sweep is never included: only the scheduler's service account may call it."
  type        = list(string)
  default     = ["allUsers"]
}

variable "a2a_invokers" {
  description = "Emails of the service accounts that may call A2A with a Google-signed OIDC token (BATON_A2A_INVOKERS); each acts as user serviceAccount:<email>. Empty: only Firebase ID tokens are accepted."
  type        = list(string)
  default     = []
}

variable "a2a_audience" {
  description = "Audience service accounts' OIDC tokens must carry for A2A (BATON_A2A_AUDIENCE). Null means A2A's deterministic Cloud Run URL, https://<prefix>-a2a-<project number>.<region>.run.app."
  type        = string
  default     = null
}

variable "a2a_push_allow" {
  description = "URL prefixes A2A push notifications may be sent to (BATON_A2A_PUSH_ALLOW), each an http(s) URL ending in /, e.g. [\"https://hooks.example.com/a2a/\"]. Empty turns push notifications off."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for p in var.a2a_push_allow : can(regex("^https?://[^/]+/.*$", p)) && endswith(p, "/")])
    error_message = "a2a_push_allow: each entry an http(s) URL prefix ending in /."
  }
}

variable "allowed_origins" {
  description = "Browser origins allowed by CORS (BATON_ALLOWED_ORIGINS), e.g. [\"https://app.example.com\"]. Empty allows none (same-origin or non-browser clients only)."
  type        = list(string)
  default     = []
}

# ---- behaviour (the functions' typed Config) -------------------------------------

variable "app_name" {
  description = "ADK app name sessions are stored under (BATON_APP_NAME)."
  type        = string
  default     = "baton"
}

variable "root_collection" {
  description = "Top-level Firestore collection holding everything (BATON_ROOT_COLLECTION)."
  type        = string
  default     = "baton"
}

variable "lease_policy" {
  description = "What a second concurrent turn on a busy session gets (BATON_LEASE_POLICY): \"reject\" (409 with Retry-After) or \"enqueue\" (wait up to lease_max_wait_seconds)."
  type        = string
  default     = "reject"

  validation {
    condition     = contains(["reject", "enqueue"], var.lease_policy)
    error_message = "lease_policy: reject or enqueue."
  }
}

variable "lease_max_wait_seconds" {
  description = "Longest wait for a busy session under the enqueue policy (BATON_LEASE_MAX_WAIT). Must be shorter than request_timeout_seconds, which bounds it."
  type        = number
  default     = 10

  validation {
    condition     = var.lease_max_wait_seconds < var.request_timeout_seconds
    error_message = "lease_max_wait_seconds must be shorter than request_timeout_seconds: the wait happens before the stream starts."
  }
}

variable "request_timeout_seconds" {
  description = "Bound on a request's work before its stream starts: authentication, the wait for the session's lease, ledger checks (BATON_REQUEST_TIMEOUT). The agent run has its own bound, invocation_timeout_seconds."
  type        = number
  default     = 30
}

variable "pending_policy" {
  description = "What a new message does to calls still waiting for an answer (BATON_PENDING_POLICY): \"cancel\" them or \"reject\" the message."
  type        = string
  default     = "cancel"

  validation {
    condition     = contains(["cancel", "reject"], var.pending_policy)
    error_message = "pending_policy: cancel or reject."
  }
}

variable "check_revoked" {
  description = "Also ask the Firebase Auth API, on every request, whether the user's ID token was revoked or the user disabled or deleted (BATON_CHECK_REVOKED). Costs one Auth API call per request; without it a revoked token works until it expires (at most an hour). Grants the functions' account roles/firebaseauth.viewer."
  type        = bool
  default     = false
}

variable "include_thoughts" {
  description = "Ask the model for a summary of its thinking on every request (BATON_INCLUDE_THOUGHTS): streamed to useChat as reasoning parts, kept in the chat's history. Thought tokens count toward the token budgets either way."
  type        = bool
  default     = false
}

variable "idle_retention" {
  description = "How long a chat may stay idle before Sweep deletes it with its sessions, events and ledger records (BATON_IDLE_RETENTION, a Go duration in hours or less, e.g. 720h for 30 days)."
  type        = string
  default     = "720h"

  validation {
    condition     = can(regex("^[0-9]+(h|m|s)$", var.idle_retention))
    error_message = "idle_retention must be a whole number of hours, minutes or seconds, e.g. 720h."
  }
}

variable "account_check" {
  description = "How often Sweep asks Firebase Authentication about every user that has data, deleting the data of users it no longer has (BATON_ACCOUNT_CHECK, a Go duration such as 24h, or off). The runtime account gets roles/firebaseauth.viewer for it."
  type        = string
  default     = "24h"

  validation {
    condition     = var.account_check == "off" || can(regex("^[0-9]+(h|m|s)$", var.account_check))
    error_message = "account_check must be off or a whole number of hours, minutes or seconds, e.g. 24h."
  }
}

variable "title_model" {
  description = "The Gemini model that gives each new chat a short title after its first exchange (BATON_TITLE_MODEL), or off: the first words of the first message stay its title."
  type        = string
  default     = "gemini-3.8-flash"
}

variable "call_timeout" {
  description = "Default expiry of a paused call (BATON_CALL_TIMEOUT), a Go duration such as \"10m\"."
  type        = string
  default     = "10m"
}

variable "invocation_timeout_seconds" {
  description = "Bound on one agent run (BATON_INVOCATION_TIMEOUT). The request timeout of Turn, ToolResult and Sweep is derived from it."
  type        = number
  default     = 120

  validation {
    condition     = var.invocation_timeout_seconds >= 10 && var.invocation_timeout_seconds <= 3000
    error_message = "invocation_timeout_seconds: between 10 and 3000 (Cloud Run allows requests up to 3600 s)."
  }
}

variable "max_body_bytes" {
  description = "Request body limit in bytes (BATON_MAX_BODY_BYTES)."
  type        = number
  default     = 262144
}

variable "max_chat_body_bytes" {
  description = "Limit of a whole Chat body, which repeats the conversation's history (BATON_MAX_CHAT_BODY_BYTES). Cloud Run refuses requests over 32 MiB."
  type        = number
  default     = 33554432

  validation {
    condition     = var.max_chat_body_bytes > 0 && var.max_chat_body_bytes <= 33554432
    error_message = "max_chat_body_bytes: between 1 and 33554432 (Cloud Run's request limit)."
  }
}

variable "max_file_bytes" {
  description = "Limit of each file a chat message carries, decoded (BATON_MAX_FILE_BYTES)."
  type        = number
  default     = 10485760
}

variable "keepalive" {
  description = "Interval of SSE keep-alive comments while the model is slow (BATON_KEEPALIVE), a Go duration."
  type        = string
  default     = "15s"
}

variable "token_key_version" {
  description = "Generation of the call-token HMAC key (BATON_TOKEN_KEY), which Terraform generates and never stores in its state. Increase it to rotate the key; tokens of calls paused before the rotation stop verifying."
  type        = number
  default     = 1
}

# ---- capacity ----------------------------------------------------------------------

variable "memory" {
  description = "Memory of each instance of Turn, ToolResult and Pending."
  type        = string
  default     = "512Mi"
}

variable "cpu" {
  description = "vCPUs of each instance of Turn, ToolResult and Pending (at least 1 for concurrency above 1)."
  type        = string
  default     = "1"
}

variable "concurrency" {
  description = "Concurrent requests per instance of Turn, ToolResult and Pending. A turn mostly waits on the model while it streams, so one instance can hold many."
  type        = number
  default     = 40
}

variable "min_instances" {
  description = "Instances kept warm per browser-facing function (0 = scale to zero; 1 on Turn avoids cold starts at the price of an idle instance)."
  type        = number
  default     = 0
}

variable "max_instances" {
  description = "Upper bound on instances per browser-facing function: a cost ceiling."
  type        = number
  default     = 10
}

variable "sweep_schedule" {
  description = "Cron schedule of the Sweep job that expires overdue calls and resumes settled ones."
  type        = string
  default     = "* * * * *"
}

variable "sweep_timeout_seconds" {
  description = "Request timeout of Sweep (and the scheduler's attempt deadline). Sweep resumes agents one after another and stops when its deadline nears; it must allow at least one invocation."
  type        = number
  default     = 300

  validation {
    condition     = var.sweep_timeout_seconds > var.request_timeout_seconds + var.invocation_timeout_seconds && var.sweep_timeout_seconds <= 1800
    error_message = "sweep_timeout_seconds: longer than request_timeout_seconds + invocation_timeout_seconds (Sweep's own deadline), and at most 1800 (Cloud Scheduler's longest attempt deadline)."
  }
}

variable "sweep_audience" {
  description = "Audience of the scheduler's OIDC token (BATON_SWEEP_AUDIENCE). Null means Sweep's deterministic Cloud Run URL, https://<prefix>-sweep-<project number>.<region>.run.app, which Cloud Run accepts and which is known before the function exists (the function's own URL attribute would make Sweep depend on itself)."
  type        = string
  default     = null
}

# ---- source ------------------------------------------------------------------------

variable "source_archive" {
  description = "Path of the archive built by `go run ./infra/package -out baton.zip` (relative paths are relative to infra/terraform). Its SHA-256 names the uploaded object and tags the image built from it, so a code change redeploys every function."
  type        = string
  default     = "../../baton.zip"
}

variable "buildpacks_builder" {
  description = "Buildpacks builder image Cloud Build turns the archive into the functions' image with (image.tf)."
  type        = string
  default     = "gcr.io/buildpacks/builder:google-24"
}

variable "go_version" {
  description = "Go version the buildpack compiles with (GOOGLE_GO_VERSION, a semver constraint); at least go.mod's go line."
  type        = string
  default     = "1.26.x"
}

variable "trace_export" {
  description = "Where the functions send their spans (BATON_TRACE_EXPORT): none, or cloudtrace (Cloud Trace in this project; enables its API and grants the runtime account roles/cloudtrace.agent)."
  type        = string
  default     = "none"

  validation {
    condition     = contains(["none", "cloudtrace"], var.trace_export)
    error_message = "trace_export: none or cloudtrace."
  }
}

# Turn limits (docs/limits.md): 0 sets no limit. Counted in Firestore, so
# they hold across instances.

variable "user_turns_per_minute" {
  description = "Turns a signed-in user may start in any minute, across all chats and instances (BATON_USER_TURNS_PER_MINUTE); 0: no limit. Costs one document write per turn."
  type        = number
  default     = 30

  validation {
    condition     = var.user_turns_per_minute >= 0 && var.user_turns_per_minute <= 10000 && floor(var.user_turns_per_minute) == var.user_turns_per_minute
    error_message = "user_turns_per_minute: a whole number from 0 to 10000."
  }
}

variable "chat_turns_per_minute" {
  description = "Turns one chat may start in any minute, whoever the caller (BATON_CHAT_TURNS_PER_MINUTE); 0: no limit."
  type        = number
  default     = 20

  validation {
    condition     = var.chat_turns_per_minute >= 0 && var.chat_turns_per_minute <= 10000 && floor(var.chat_turns_per_minute) == var.chat_turns_per_minute
    error_message = "chat_turns_per_minute: a whole number from 0 to 10000."
  }
}

variable "anon_user_turns_per_minute" {
  description = "Turns a user signed in anonymously may start in any minute (BATON_ANON_USER_TURNS_PER_MINUTE); 0: no limit."
  type        = number
  default     = 10

  validation {
    condition     = var.anon_user_turns_per_minute >= 0 && var.anon_user_turns_per_minute <= 10000 && floor(var.anon_user_turns_per_minute) == var.anon_user_turns_per_minute
    error_message = "anon_user_turns_per_minute: a whole number from 0 to 10000."
  }
}

variable "service_turns_per_minute" {
  description = "Turns a service account calling A2A may start in any minute (BATON_SERVICE_TURNS_PER_MINUTE); 0: no limit."
  type        = number
  default     = 120

  validation {
    condition     = var.service_turns_per_minute >= 0 && var.service_turns_per_minute <= 10000 && floor(var.service_turns_per_minute) == var.service_turns_per_minute
    error_message = "service_turns_per_minute: a whole number from 0 to 10000."
  }
}

variable "user_tokens_per_day" {
  description = "Model tokens a signed-in user may use per UTC day (BATON_USER_TOKENS_PER_DAY); 0: no budget. Any budget makes every model response cost one more document write."
  type        = number
  default     = 0

  validation {
    condition     = var.user_tokens_per_day >= 0 && floor(var.user_tokens_per_day) == var.user_tokens_per_day
    error_message = "user_tokens_per_day: a whole number, 0 for no budget."
  }
}

variable "anon_user_tokens_per_day" {
  description = "Model tokens a user signed in anonymously may use per UTC day (BATON_ANON_USER_TOKENS_PER_DAY); 0: no budget."
  type        = number
  default     = 0

  validation {
    condition     = var.anon_user_tokens_per_day >= 0 && floor(var.anon_user_tokens_per_day) == var.anon_user_tokens_per_day
    error_message = "anon_user_tokens_per_day: a whole number, 0 for no budget."
  }
}

variable "service_tokens_per_day" {
  description = "Model tokens a service account calling A2A may use per UTC day (BATON_SERVICE_TOKENS_PER_DAY); 0: no budget."
  type        = number
  default     = 0

  validation {
    condition     = var.service_tokens_per_day >= 0 && floor(var.service_tokens_per_day) == var.service_tokens_per_day
    error_message = "service_tokens_per_day: a whole number, 0 for no budget."
  }
}

variable "live_timeout_seconds" {
  description = "Request timeout of the Chat service, which also serves live mode's WebSocket (GET /Chat/{chatId}/live): Cloud Run holds a socket for at most this long. A live conversation ends a minute before (BATON_LIVE_TIMEOUT) and the page reconnects. Turns and resumes bound their own work (request and invocation timeouts)."
  type        = number
  default     = 3600

  validation {
    condition     = var.live_timeout_seconds >= 300 && var.live_timeout_seconds <= 3600 && floor(var.live_timeout_seconds) == var.live_timeout_seconds
    error_message = "live_timeout_seconds: whole seconds between 300 and 3600 (Cloud Run's longest request)."
  }
}

variable "live_model" {
  description = "Gemini Live model of live mode (BATON_LIVE_MODEL). Empty: gemini-3.8-live, the stable Live model's id on both the Gemini API and Vertex AI (docs/configuration.md)."
  type        = string
  default     = ""
}

variable "live_segments_per_user" {
  description = "Live conversations a user may hold at once (BATON_LIVE_SEGMENTS_PER_USER); 0: no bound."
  type        = number
  default     = 2

  validation {
    condition     = var.live_segments_per_user >= 0 && floor(var.live_segments_per_user) == var.live_segments_per_user
    error_message = "live_segments_per_user: a whole number, 0 for no bound."
  }
}

# The deployment's caps (docs/limits.md, "The deployment's caps"): 0 sets
# none.

variable "service_tokens_cap" {
  description = "Model tokens every user together may use per UTC day (BATON_SERVICE_TOKENS_CAP); past it new messages get 429 service_cap, answers to paused calls still go through; 0: no cap. Counted in 1,000 shards, one more small write per model response."
  type        = number
  default     = 0

  validation {
    condition     = var.service_tokens_cap >= 0 && floor(var.service_tokens_cap) == var.service_tokens_cap
    error_message = "service_tokens_cap: a whole number, 0 for no cap."
  }
}

variable "new_anonymous_per_day" {
  description = "Anonymous users who may start their first turn per UTC day (BATON_NEW_ANONYMOUS_PER_DAY); 0: no cap."
  type        = number
  default     = 0

  validation {
    condition     = var.new_anonymous_per_day >= 0 && floor(var.new_anonymous_per_day) == var.new_anonymous_per_day
    error_message = "new_anonymous_per_day: a whole number, 0 for no cap."
  }
}

# The operator's console (docs/operator.md).

variable "operators" {
  description = "Verified emails of the Firebase users who may use the console at <admin_url>/admin (BATON_OPERATORS); users with the custom claim operator_claim set to true are operators too."
  type        = list(string)
  default     = []
}

variable "operator_claim" {
  description = "The Firebase custom claim that makes a user an operator when true (BATON_OPERATOR_CLAIM)."
  type        = string
  default     = "baton_operator"
}

variable "firebase_api_key" {
  description = "The Firebase Web API key the console page signs operators in with (BATON_FIREBASE_API_KEY; not a secret: Firebase web apps ship it). Empty: the page says the console is not set up."
  type        = string
  default     = ""
}

variable "metric_export" {
  description = "Where the functions send their metrics (BATON_METRIC_EXPORT): cloudmonitoring (Cloud Monitoring in this project, which the dashboard and the alerts read; enables its API and grants the runtime account roles/monitoring.metricWriter), or none."
  type        = string
  default     = "cloudmonitoring"

  validation {
    condition     = contains(["none", "cloudmonitoring"], var.metric_export)
    error_message = "metric_export: none or cloudmonitoring."
  }
}

variable "notification_channels" {
  description = "Cloud Monitoring notification channels (projects/P/notificationChannels/ID) the alert policies notify; empty: the alerts open incidents in the console only."
  type        = list(string)
  default     = []
}

variable "alert_5xx_ratio" {
  description = "The share of a function's requests answered 5xx over 5 minutes above which the 5xx alert fires."
  type        = number
  default     = 0.05
}

variable "alert_overdue_calls" {
  description = "Calls the last sweep found overdue (due for more than five minutes) above which the overdue-calls alert fires, held for 10 minutes."
  type        = number
  default     = 0
}

variable "alert_refusals_per_minute" {
  description = "Turns refused per minute for budgets and caps (baton.limits.refused of user_budget, service_tokens, new_anonymous) above which the budget-exhaustion alert fires."
  type        = number
  default     = 20
}

variable "alert_sweep_absent_seconds" {
  description = "How long without a sweep run (baton.sweep.runs) before the no-sweep alert fires: two runs of the every-minute schedule, and a minute for the metrics' export."
  type        = number
  default     = 180
}

variable "work_deadline_seconds" {
  description = "Dispatch deadline of a background call's delivery to Work (BATON_WORK_DEADLINE): the queue counts a delivery unanswered after it as failed and retries it. Work's request timeout is a minute longer. A delivery runs the tool, records its result and runs the resumed agent (invocation_timeout_seconds), so the tool's own run is bounded by the deadline less the invocation timeout and 30 s."
  type        = number
  default     = 1800

  validation {
    condition     = var.work_deadline_seconds >= 15 && var.work_deadline_seconds <= 1800 && var.work_deadline_seconds > var.invocation_timeout_seconds + 30 && floor(var.work_deadline_seconds) == var.work_deadline_seconds
    error_message = "work_deadline_seconds: whole seconds from 15 to 1800 (Cloud Tasks' range for HTTP tasks), and more than invocation_timeout_seconds + 30."
  }
}

variable "work_max_attempts" {
  description = "Most deliveries of one background call's task (the queue's retry_config.max_attempts): retries of retryable errors, of workers that died, and of duplicates turned away while an attempt runs. A tool's MaxAttempts (3 by default) must fit within it."
  type        = number
  default     = 10

  validation {
    condition     = var.work_max_attempts >= 3 && floor(var.work_max_attempts) == var.work_max_attempts
    error_message = "work_max_attempts: a whole number of at least 3, a tool's default bound."
  }
}

variable "work_min_backoff_seconds" {
  description = "The queue's first retry delay; each later one doubles (up to five times), to work_max_backoff_seconds."
  type        = number
  default     = 5
}

variable "work_max_backoff_seconds" {
  description = "The queue's longest retry delay."
  type        = number
  default     = 300

  validation {
    condition     = var.work_max_backoff_seconds >= var.work_min_backoff_seconds
    error_message = "work_max_backoff_seconds: at least work_min_backoff_seconds."
  }
}

variable "work_dispatches_per_second" {
  description = "Most deliveries the queue starts per second."
  type        = number
  default     = 20
}

variable "work_concurrent_dispatches" {
  description = "Most deliveries in flight at once: background calls running at once, over every user."
  type        = number
  default     = 100
}

variable "work_concurrency" {
  description = "Deliveries one Work instance serves at once (its max_instance_request_concurrency). Each holds a tool's run for its whole length."
  type        = number
  default     = 10
}

variable "work_max_instances" {
  description = "Most Work instances."
  type        = number
  default     = 10
}

variable "background_per_user" {
  description = "Background calls one user may have running at once, over every chat (BATON_BACKGROUND_PER_USER); a call over it is refused with an error response the model reads."
  type        = number
  default     = 5

  validation {
    condition     = var.background_per_user >= 1 && floor(var.background_per_user) == var.background_per_user
    error_message = "background_per_user: a whole number, at least 1."
  }
}
