package ledger

import "github.com/baton-run/baton/sessionstore"

// Indexes lists the composite indexes the ledger's queries need; the
// deployment declares each of them.
var Indexes = []sessionstore.Index{
	{CollectionGroup: collection, QueryScope: "COLLECTION_GROUP", Fields: []string{fieldScope, fieldSweepAt}},
	{CollectionGroup: collection, QueryScope: "COLLECTION_GROUP", Fields: []string{fieldWorkOwner, fieldStatus, fieldKind}},
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
	collection: {fieldScope, fieldSweepAt, fieldStatus, fieldStep, fieldResumed, fieldInCall, fieldKind, fieldUser, fieldCreated, fieldWorkOwner},
}

// DataKinds are the kinds of a person's data the ledger keeps (see
// sessionstore.DataKind).
var DataKinds = []sessionstore.DataKind{
	{Name: "ledger record", Owner: "ledger", Collection: collection, Path: "{session}/calls/{call}", Scope: sessionstore.ScopeSession,
		Export: sessionstore.ExportMessages, Kept: "as long as its session; Firestore collects it Retention (7 days) after it expires"},
}
