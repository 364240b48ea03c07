package sqlstore

import (
	"reflect"

	"github.com/weft-agents/weft"
)

// SameHistory reports whether a history a store kept in memory is the one it stores (the checks
// WEFT_SQLITE_CHECK_HISTORY and WEFT_POSTGRES_CHECK_HISTORY turn on): the same messages, field for
// field, in the same order.
func SameHistory(stored []weft.Message, kept []*weft.Message) bool {
	if len(stored) != len(kept) {
		return false
	}
	for i := range kept {
		if !reflect.DeepEqual(&stored[i], kept[i]) {
			return false
		}
	}
	return true
}
