package memstore

import (
	"bytes"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/storetest"
)

func open(t *testing.T) weft.Store {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) { storetest.Run(t, open) }

func TestEnvEncrypted(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	set := func() []byte {
		if err := s.SetEnv(ctx, weft.EnvUser, "u", []weft.EnvValue{{Name: "K", Value: "sk-plaintext-secret"}}); err != nil {
			t.Fatal(err)
		}
		return s.rawEnv(weft.EnvUser, "u", "K")
	}
	a, b := set(), set()
	if bytes.Equal(a, b) || bytes.Contains(a, []byte("sk-plaintext-secret")) || len(a) == 0 {
		t.Errorf("ciphertexts %x / %x", a, b)
	}
	if _, err := New(Options{Key: []byte("short")}); err == nil {
		t.Error("New accepted a short key")
	}
}

func bench(b *testing.B, fn func(*testing.B, weft.Store)) {
	s, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	fn(b, s)
}

func BenchmarkStepTx(b *testing.B)          { bench(b, storetest.StepTx) }
func BenchmarkToolTurn(b *testing.B)        { bench(b, storetest.ToolTurn) }
func BenchmarkMessagesContext(b *testing.B) { bench(b, storetest.MessagesContext) }
func BenchmarkBeginRun(b *testing.B)        { bench(b, storetest.BeginRun) }
