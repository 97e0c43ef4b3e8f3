package ledger

import "github.com/baton-run/baton/sessionstore"

// Indexes lists the composite indexes the ledger's queries need; the
// deployment declares each of them.
var Indexes = []sessionstore.Index{
	{CollectionGroup: collection, QueryScope: "COLLECTION_GROUP", Fields: []string{fieldScope, fieldSweepAt}},
	// The console (browse.go): Waiting, with and without a user, and
	// Overdue of one user.
	{CollectionGroup: collection, QueryScope: "COLLECTION_GROUP", Fields: []string{fieldScope, fieldStatus, fieldKind, fieldCreated}},
	{CollectionGroup: collection, QueryScope: "COLLECTION_GROUP", Fields: []string{fieldScope, fieldUser, fieldStatus, fieldKind, fieldCreated}},
	{CollectionGroup: collection, QueryScope: "COLLECTION_GROUP", Fields: []string{fieldScope, fieldUser, fieldSweepAt}},
}

// TTLs lists the time-to-live fields of the ledger's records.
var TTLs = []sessionstore.TTL{{CollectionGroup: collection, Field: fieldGCAt}}

// QueriedFields are the fields the ledger's queries filter or order on, by
// collection group: their automatic indexes must not be exempted.
var QueriedFields = map[string][]string{
	collection: {fieldScope, fieldSweepAt, fieldStatus, fieldStep, fieldResumed, fieldInCall, fieldKind, fieldUser, fieldCreated},
}
