package ledger

import "github.com/baton-run/baton/sessionstore"

// Indexes lists the composite indexes the ledger's queries need; the
// deployment declares each of them.
var Indexes = []sessionstore.Index{
	{CollectionGroup: collection, QueryScope: "COLLECTION_GROUP", Fields: []string{fieldScope, fieldSweepAt}},
}

// TTLs lists the time-to-live fields of the ledger's records.
var TTLs = []sessionstore.TTL{{CollectionGroup: collection, Field: fieldGCAt}}

// QueriedFields are the fields the ledger's queries filter or order on, by
// collection group: their automatic indexes must not be exempted.
var QueriedFields = map[string][]string{
	collection: {fieldScope, fieldSweepAt, fieldStatus, fieldStep, fieldResumed, fieldInCall},
}
