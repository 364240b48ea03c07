package sqlite

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
)

// BenchmarkTx3Writes is the baseline of the storage budget: one Tx with three small writes.
func BenchmarkTx3Writes(b *testing.B) {
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "weft.db"), Options{Key: envcrypt.NewKey()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(b.Context(), th, nil); err != nil {
		b.Fatal(err)
	}
	v := json.RawMessage(`{"n":1}`)
	b.ReportAllocs()
	for b.Loop() {
		err := s.Tx(b.Context(), th.ID, nil, func(tx weft.Tx) error {
			if err := tx.SetExecState("a", v); err != nil {
				return err
			}
			if err := tx.SetExecState("b", v); err != nil {
				return err
			}
			return tx.SetKV("c", v)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
