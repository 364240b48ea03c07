package weft

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"
)

// FuzzEncodeULID: encodeULID writes what the ulid package does, in lowercase.
func FuzzEncodeULID(f *testing.F) {
	f.Add(uint64(0), uint64(0))
	f.Add(^uint64(0), ^uint64(0))
	f.Add(uint64(0x0123456789abcdef), uint64(0xfedcba9876543210))
	f.Add(uint64(1)<<63, uint64(1))
	f.Fuzz(func(t *testing.T, hi, lo uint64) {
		var id ulid.ULID
		binary.BigEndian.PutUint64(id[:8], hi)
		binary.BigEndian.PutUint64(id[8:], lo)
		var got [ulidLen]byte
		encodeULID(got[:], hi, lo)
		if want := strings.ToLower(id.String()); string(got[:]) != want {
			t.Fatalf("%016x%016x: %s, want %s", hi, lo, got, want)
		}
	})
}
