# The Firestore database, its TTL policy, its index exemptions and every index
# a query in the code needs. The lists in code are the source of truth
# (toolcallback.Indexes, toolcallback.TTLs, a2aserver's Indexes, FieldIndexes
# and TTLs, sessionstore's List query);
# infra/terraform_test.go holds this file to them.

resource "google_firestore_database" "baton" {
  project     = var.project
  name        = var.firestore_database
  location_id = coalesce(var.firestore_location, var.region)
  type        = "FIRESTORE_NATIVE"

  delete_protection_state = var.firestore_delete_on_destroy ? "DELETE_PROTECTION_DISABLED" : "DELETE_PROTECTION_ENABLED"
  deletion_policy         = var.firestore_delete_on_destroy ? "DELETE" : "ABANDON"

  depends_on = [google_project_service.apis]
}

# Ledger records (toolcallback: {session}/calls/{call}) are garbage-collected
# some time after gcAt. Firestore deletes late (up to a day) and never
# cascades: expiry semantics live in code, TTL only collects garbage. A TTL
# field's single-field indexes are exempted: a monotonically increasing
# timestamp index is a write hotspot and nothing queries it.
resource "google_firestore_field" "calls_ttl" {
  project    = var.project
  database   = google_firestore_database.baton.name
  collection = "calls"
  field      = "gcAt"

  ttl_config {}

  # Empty: no single-field indexes on this field.
  index_config {}
}

# A deleted chat's tombstone (sessionstore.TTLs: users/{user}/chats/{chat})
# is garbage once late answers to its calls can no longer come.
resource "google_firestore_field" "chats_ttl" {
  project    = var.project
  database   = google_firestore_database.baton.name
  collection = "chats"
  field      = "gcAt"

  ttl_config {}

  index_config {}
}

# The turn limits' counts (toolcallback.TTLs: users/{user}/limits/*) are
# garbage once their window has passed.
resource "google_firestore_field" "limits_ttl" {
  project    = var.project
  database   = google_firestore_database.baton.name
  collection = "limits"
  field      = "gcAt"

  ttl_config {}

  index_config {}
}

# A2A tasks (a2aserver.TTLs: {chat}/a2aTasks/{task}, its a2aEvents and
# a2aPush) are garbage-collected some time after gcAt, like the ledger.
resource "google_firestore_field" "a2a_ttl" {
  for_each = toset(["a2aTasks", "a2aEvents", "a2aPush"])

  project    = var.project
  database   = google_firestore_database.baton.name
  collection = each.key
  field      = "gcAt"

  ttl_config {}

  index_config {}
}

# A2A: finding a task by id is a collection-group query on a2aTasks.key
# (a2aserver.FieldIndexes); automatic indexes cover collection scope only.
resource "google_firestore_field" "a2a_tasks_key" {
  project    = var.project
  database   = google_firestore_database.baton.name
  collection = "a2aTasks"
  field      = "key"

  index_config {
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION"
    }
    indexes {
      order       = "DESCENDING"
      query_scope = "COLLECTION"
    }
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION_GROUP"
    }
  }
}

# A2A subscribers follow a task's events: collection group "a2aEvents",
# key == X and version > N, ordered by version (a2aserver.Indexes).
resource "google_firestore_index" "a2a_events_key_version" {
  project     = var.project
  database    = google_firestore_database.baton.name
  collection  = "a2aEvents"
  query_scope = "COLLECTION_GROUP"

  fields {
    field_path = "key"
    order      = "ASCENDING"
  }

  fields {
    field_path = "version"
    order      = "ASCENDING"
  }
}

# Sweep: collection group "calls", scope == X and sweepAt <= now, ordered by
# sweepAt (toolcallback.Indexes).
resource "google_firestore_index" "calls_scope_sweep_at" {
  project     = var.project
  database    = google_firestore_database.baton.name
  collection  = "calls"
  query_scope = "COLLECTION_GROUP"

  fields {
    field_path = "scope"
    order      = "ASCENDING"
  }

  fields {
    field_path = "sweepAt"
    order      = "ASCENDING"
  }
}

# The per-user bound on background calls: collection group "calls",
# work.owner == X, status == "pending" and kind == "background", counted
# (ledger.Indexes).
resource "google_firestore_index" "calls_work_owner_status" {
  project     = var.project
  database    = google_firestore_database.baton.name
  collection  = "calls"
  query_scope = "COLLECTION_GROUP"

  fields {
    field_path = "work.owner"
    order      = "ASCENDING"
  }

  fields {
    field_path = "status"
    order      = "ASCENDING"
  }

  fields {
    field_path = "kind"
    order      = "ASCENDING"
  }
}

# Chat cleanup (sessionstore.Indexes): collection group "chats", scope == X
# and a range on cleanupAt (switches to finish or undo) or on lastActivity
# (idle chats to delete).
resource "google_firestore_index" "chats_scope_cleanup_at" {
  project     = var.project
  database    = google_firestore_database.baton.name
  collection  = "chats"
  query_scope = "COLLECTION_GROUP"

  fields {
    field_path = "scope"
    order      = "ASCENDING"
  }

  fields {
    field_path = "cleanupAt"
    order      = "ASCENDING"
  }
}

resource "google_firestore_index" "chats_scope_last_activity" {
  project     = var.project
  database    = google_firestore_database.baton.name
  collection  = "chats"
  query_scope = "COLLECTION_GROUP"

  fields {
    field_path = "scope"
    order      = "ASCENDING"
  }

  fields {
    field_path = "lastActivity"
    order      = "ASCENDING"
  }
}

# Token budgets (sessionstore.SessionTokens): the sum of tokensUsed over a
# user's sessions with tokensDay == today. Firestore computes a sum from
# index entries, so the summed field must be in the index.
resource "google_firestore_index" "sessions_tokens" {
  project     = var.project
  database    = google_firestore_database.baton.name
  collection  = "sessions"
  query_scope = "COLLECTION"

  fields {
    field_path = "tokensDay"
    order      = "ASCENDING"
  }

  fields {
    field_path = "tokensUsed"
    order      = "ASCENDING"
  }
}

# sessionstore's List across all users of an app: collection group
# "sessions", scope == X. An equality filter on one field needs only that
# field's single-field index, but automatic indexes cover collection scope
# only; this enables it for the collection group too (keeping the automatic
# collection-scope ones).
resource "google_firestore_field" "sessions_scope" {
  project    = var.project
  database   = google_firestore_database.baton.name
  collection = "sessions"
  field      = "scope"

  index_config {
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION"
    }
    indexes {
      order       = "DESCENDING"
      query_scope = "COLLECTION"
    }
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION_GROUP"
    }
  }
}

# Payload fields no query filters or orders on: packed event JSON (up to
# ~1 MB per document), state blobs, tool arguments and answers. Firestore
# indexes every field by default; exempting these saves index writes and
# index storage on every append. Keys are "collection group/field".
locals {
  unindexed_fields = toset([
    "sessions/tail",     # sessionstore: the session's recent events
    "sessions/chunks",   # sessionstore: index of sealed chunks (read, never queried)
    "sessions/state",    # sessionstore: session-scoped state, JSON
    "events/events",     # sessionstore: a sealed chunk of events
    "calls/args",        # toolcallback: the call's arguments, JSON
    "calls/answer",      # toolcallback: the recorded answer, JSON
    "a2aTasks/task",     # a2aserver: the task, JSON
    "a2aEvents/message", # a2aserver: a stored event, JSON
    "a2aPush/config",    # a2aserver: a push-notification config, JSON
  ])
}

resource "google_firestore_field" "unindexed" {
  for_each = local.unindexed_fields

  project    = var.project
  database   = google_firestore_database.baton.name
  collection = split("/", each.key)[0]
  field      = split("/", each.key)[1]

  index_config {}
}

# The deployment's caps (limits.Indexes): the sum of n over the shards of
# one counter's day, limits collection under the app's document.
resource "google_firestore_index" "limits_counter_day_n" {
  project     = var.project
  database    = google_firestore_database.baton.name
  collection  = "limits"
  query_scope = "COLLECTION"

  fields {
    field_path = "counter"
    order      = "ASCENDING"
  }

  fields {
    field_path = "day"
    order      = "ASCENDING"
  }

  fields {
    field_path = "n"
    order      = "ASCENDING"
  }
}

# The console (ledger.Indexes, browse.go): pending calls across sessions
# by kind, oldest first, with and without a user; one user's overdue
# calls.
resource "google_firestore_index" "calls_console" {
  for_each = {
    waiting      = ["scope", "status", "kind", "created"]
    waiting_user = ["scope", "user", "status", "kind", "created"]
    overdue_user = ["scope", "user", "sweepAt"]
  }

  project     = var.project
  database    = google_firestore_database.baton.name
  collection  = "calls"
  query_scope = "COLLECTION_GROUP"

  dynamic "fields" {
    for_each = each.value
    content {
      field_path = fields.value
      order      = "ASCENDING"
    }
  }
}

# The console (sessionstore.Indexes, browse.go): an app's sessions by
# their lease's term (running, stuck) and by liveUntil (live).
resource "google_firestore_index" "sessions_console" {
  for_each = {
    lease = "lease.expires"
    live  = "liveUntil"
  }

  project     = var.project
  database    = google_firestore_database.baton.name
  collection  = "sessions"
  query_scope = "COLLECTION_GROUP"

  fields {
    field_path = "scope"
    order      = "ASCENDING"
  }

  fields {
    field_path = each.value
    order      = "ASCENDING"
  }
}
