package memstore

import (
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/storetest"
)

func TestAuthConformance(t *testing.T) {
	storetest.RunAuth(t, func(t *testing.T) weft.AuthStore { return open(t).(*Store) })
}
