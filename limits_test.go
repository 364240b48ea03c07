package weft_test

import (
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

func TestByteSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 999: "999 bytes", 1024: "1 KiB", 1500: "1,500 bytes",
		20 << 20: "20 MiB", 20<<20 + 1: "20,971,521 bytes"} {
		if got := weft.ByteSize(n); got != want {
			t.Errorf("ByteSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCheckNewMessage(t *testing.T) {
	many := make([]weft.ToolAttachment, weft.MaxAttachments+1)
	cases := []struct {
		m    weft.NewMessage
		want string
	}{
		{weft.NewMessage{Content: "hi"}, ""},
		{weft.NewMessage{Content: strings.Repeat("x", weft.MaxMessageBytes)}, ""},
		{weft.NewMessage{Content: strings.Repeat("x", weft.MaxMessageBytes+1)}, "the message is 20,971,521 bytes; the limit is 20 MiB"},
		{weft.NewMessage{Attachments: many}, "33 attachments; the limit is 32"},
		{weft.NewMessage{Attachments: []weft.ToolAttachment{{Name: "a.bin", Data: make([]byte, weft.MaxAttachmentBytes+1)}}}, `attachment "a.bin" is`},
		{weft.NewMessage{Attachments: []weft.ToolAttachment{{Data: make([]byte, 20<<20)}, {Data: make([]byte, 20<<20)}, {Data: make([]byte, 20<<20)}}},
			"the message's attachments total 60 MiB; the limit is 50 MiB"},
	}
	for _, tc := range cases {
		err := weft.CheckNewMessage(tc.m)
		switch {
		case tc.want == "" && err != nil, tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("got %v, want %q", err, tc.want)
		case err != nil && weft.ErrorCode(err) != weft.EInvalid:
			t.Errorf("code %s", weft.ErrorCode(err))
		}
	}
}

func TestJSONDepth(t *testing.T) {
	for in, want := range map[string]int{`1`: 0, `{}`: 1, `{"a":[1,{"b":2}]}`: 3, `"[[["`: 0, `{"a":"\"[["}`: 1, `[[[`: 3, `]]]`: 0} {
		if got := weft.JSONDepth([]byte(in)); got != want {
			t.Errorf("JSONDepth(%s) = %d, want %d", in, got, want)
		}
	}
}

func FuzzJSONDepth(f *testing.F) {
	for _, s := range []string{`{}`, `[1,[2]]`, `"\\"`, `{"a":"]"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d := weft.JSONDepth([]byte(s)); d < 0 || d > len(s) {
			t.Fatalf("depth %d for %d bytes", d, len(s))
		}
	})
}
