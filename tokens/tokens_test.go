package tokens_test

import (
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/tokens"
)

// TestText: o200k_base counts, checked against OpenAI's tokenizer for these strings.
func TestText(t *testing.T) {
	cases := []struct {
		text string
		want int
	}{
		{"", 0},
		{"hello world", 2},
		{"Hello, world! This is a test of the tokenizer.", 12},
	}
	for _, c := range cases {
		if got := tokens.Text(c.text); got != c.want {
			t.Errorf("Text(%q) = %d, want %d", c.text, got, c.want)
		}
	}
}

// TestMessage: a message costs its text, its calls and its media, plus framing.
func TestMessage(t *testing.T) {
	text := weft.LLMMessage{Role: weft.RoleUser, Content: "hello world"}
	if got := tokens.Message(text); got != 2+tokens.PerMessage {
		t.Errorf("text message: %d", got)
	}
	img := weft.LLMMessage{Role: weft.RoleUser, Parts: []weft.ContentPart{{Type: weft.PartText, Text: "hello world"},
		{Type: weft.PartImage, URL: "data:image/png;base64,AAAA"}}}
	if got := tokens.Message(img); got != 2+tokens.PerMessage+tokens.ImageTokens {
		t.Errorf("image message: %d", got)
	}
	call := weft.LLMMessage{Role: weft.RoleAssistant, ToolCalls: []weft.ToolCall{{Name: "lookup", Arguments: `{"q":"x"}`}}}
	if got := tokens.Message(call); got <= 2*tokens.PerMessage {
		t.Errorf("call message: %d", got)
	}
}

func BenchmarkText1200(b *testing.B) {
	s := strings.Repeat("the weather on day 12 was mild and dry. ", 30)
	b.ReportAllocs()
	for b.Loop() {
		tokens.Text(s)
	}
}

// TestCounter: a Counter's counts equal the package's, remembered or not, and Bound bounds them.
func TestCounter(t *testing.T) {
	var c tokens.Counter
	texts := []string{"short", strings.Repeat("a longer text that a thread sends again and again. ", 5), "café ☕ 東京"}
	for range 2 {
		for _, s := range texts {
			m := weft.LLMMessage{Role: weft.RoleUser, Content: s, ToolCalls: []weft.ToolCall{{Name: "f", Arguments: s}}}
			if got, want := c.Message(m), tokens.Message(m); got != want {
				t.Errorf("Counter.Message(%.20q) = %d, want %d", s, got, want)
			}
			if b := tokens.Bound(m); b < tokens.Message(m) {
				t.Errorf("Bound(%.20q) = %d < %d", s, b, tokens.Message(m))
			}
		}
	}
}

func BenchmarkCounterRepeated(b *testing.B) {
	var c tokens.Counter
	s := strings.Repeat("the weather on day 12 was mild and dry. ", 30)
	b.ReportAllocs()
	for b.Loop() {
		c.Text(s)
	}
}
