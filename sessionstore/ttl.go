package sessionstore

// TTL is a collection group's time-to-live field: Firestore deletes a
// document some time (up to a day) after the time it holds. Expiry
// semantics are in code; a TTL only collects garbage. The packages that
// keep documents declare theirs with this type, as they declare indexes
// with Index, and the deployment declares each.
type TTL struct {
	CollectionGroup string
	Field           string
}

// TTLs lists the time-to-live fields of this package's documents: a
// deleted chat's tombstone (chatdelete.go).
var TTLs = []TTL{{CollectionGroup: "chats", Field: "gcAt"}}
