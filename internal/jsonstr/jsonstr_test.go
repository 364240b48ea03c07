package jsonstr

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

var samples = []string{"", "plain", `a"b\c`, "<tag>&amp;", "\b\f\n\r\t\x00\x1f\x7f", "é 日本 🙂", "\u2028\u2029",
	"\xff\xfe", "a\xed\xa0\x80b", "\xf0\x9f\x99", strings.Repeat("x", 100) + "\n"}

// TestEveryPosition: each character that needs a look, at each offset of the words read eight
// bytes at a time, and after and before plain runs of every length up to two words.
func TestEveryPosition(t *testing.T) {
	for _, special := range []string{`"`, `\`, "<", ">", "&", "\x00", "\x1f", "\n", "\x7f", " ", "~", "\x80", "\xff",
		"é", "日", "🙂", "\u2028", "\xf0\x9f"} {
		for before := 0; before <= 17; before++ {
			for after := 0; after <= 17; after += 1 + after/4 {
				s := strings.Repeat("a", before) + special + strings.Repeat("b", after)
				check(t, s)
				checkPlain(t, s)
			}
		}
	}
}

func BenchmarkAppendHTMLSafe(b *testing.B) {
	for _, s := range []string{"Where is my order 42? It was supposed to arrive yesterday.", "Заказ 42 будет доставлен завтра: «курьер»."} {
		b.Run(strconv.Itoa(len(s)), func(b *testing.B) {
			buf := make([]byte, 0, 256)
			for b.Loop() {
				buf = AppendHTMLSafe(buf[:0], s)
			}
		})
	}
}

// TestAppendHTMLSafe: AppendHTMLSafe writes what json.Marshal writes.
func TestAppendHTMLSafe(t *testing.T) {
	for _, s := range samples {
		check(t, s)
	}
}

// TestAppend: Append's JSON reads back as s, each invalid byte as U+FFFD, with no escape beyond
// JSON's own needs: no HTML escapes and no \u2028.
func TestAppend(t *testing.T) {
	for _, s := range samples {
		checkPlain(t, s)
	}
	if got := string(Append(nil, "<\b\u2028>")); got != "\"<\\u0008\u2028>\"" {
		t.Errorf("Append wrote %s", got)
	}
}

func FuzzAppend(f *testing.F) {
	for _, s := range samples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		check(t, s)
		checkPlain(t, s)
	})
}

func check(t *testing.T, s string) {
	t.Helper()
	want, _ := json.Marshal(s)
	if got := AppendHTMLSafe([]byte("x"), s); string(got) != "x"+string(want) {
		t.Fatalf("%q: AppendHTMLSafe wrote %s, json.Marshal %s", s, got[1:], want)
	}
}

func checkPlain(t *testing.T, s string) {
	t.Helper()
	got := Append(nil, s)
	var back string
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("%q: Append wrote %s: %v", s, got, err)
	}
	var want strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		want.WriteRune(r) // RuneError for an invalid byte
		i += size
	}
	if back != want.String() {
		t.Fatalf("%q: Append wrote %s, read back %q", s, got, back)
	}
	for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`, `\u2028`, `\u2029`} {
		if !strings.Contains(s, `\`) && strings.Contains(string(got), esc) {
			t.Fatalf("%q: Append wrote %s with %s", s, got, esc)
		}
	}
}
