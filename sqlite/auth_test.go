package sqlite

import (
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/storetest"
)

func TestAuthConformance(t *testing.T) {
	storetest.RunAuth(t, func(t *testing.T) weft.AuthStore {
		s := openFile(t)
		t.Cleanup(func() { s.Close() })
		return s.(*Store)
	})
}
