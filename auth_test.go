package weft

import (
	"encoding/base32"
	"strings"
	"testing"
)

func TestNewAPIKey(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		key, rec := NewAPIKey("usr_1")
		body, ok := strings.CutPrefix(key, APIKeyPrefix)
		if !ok {
			t.Fatalf("key %q lacks the prefix", key)
		}
		raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.ToUpper(body))
		if err != nil || len(raw) != 32 {
			t.Fatalf("key %q: %d random bytes, %v; want 32", key, len(raw), err)
		}
		if seen[key] {
			t.Fatal("a key repeated")
		}
		seen[key] = true
		if rec.UserID != "usr_1" || !strings.HasPrefix(rec.ID, "key_") || rec.Hash != HashAPIKey(key) || len(rec.Hash) != 64 {
			t.Fatalf("record %+v", rec)
		}
		if strings.Contains(rec.Hash, body) || len(rec.Hint) >= len(key) || !strings.HasPrefix(key, rec.Hint) {
			t.Fatalf("the record reveals the key: %+v", rec)
		}
	}
	if !SameSecret("abc", "abc") || SameSecret("abc", "abd") || SameSecret("abc", "ab") {
		t.Fatal("SameSecret")
	}
}
