// Package tokens estimates how many tokens a model reads from a request, to keep a thread's
// requests inside the model's context window.
//
// Text is counted with OpenAI's o200k_base byte-pair encoding, whose tables ship inside the
// tiktoken-go/tokenizer module (nothing is fetched at run time). For OpenAI's current models that
// is their own count; for other providers' tokenizers it is an estimate, typically within 10 % for
// English prose and code (Anthropic's and Gemini's tokenizers count somewhat more for the same text,
// which the Margin covers). Each message adds a fixed overhead for its role and framing, each media
// part a fixed estimate (ImageTokens), and each tool definition its JSON's text.
package tokens

import (
	"encoding/json"
	"sync"

	"github.com/tiktoken-go/tokenizer"
	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/weft-agents/weft"
)

const (
	// PerMessage is the framing a message costs besides its content (role, separators).
	PerMessage = 4
	// ImageTokens is the estimate for one image or other media part: an OpenAI high-detail tile set
	// of a 1024×1024 image is 765 tokens, Anthropic's estimate for a 1.15-megapixel image ~1,600;
	// the larger is taken so a request estimated to fit does fit.
	ImageTokens = 1600
	// Margin is the share of the window kept free for the estimate's error.
	Margin = 0.10
)

var (
	once sync.Once
	enc  tokenizer.Codec
)

func codecOf() tokenizer.Codec {
	once.Do(func() { enc = codec.NewO200kBase() })
	return enc
}

// Text returns the tokens of s.
func Text(s string) int {
	if s == "" {
		return 0
	}
	n, err := codecOf().Count(s)
	if err != nil {
		// The encoder fails only on invalid input it cannot split; four bytes a token is the
		// usual rate for English.
		return len(s)/4 + 1
	}
	return n
}

// Message returns the tokens of one message: its text, its tool calls' names and arguments, its
// media parts and its framing.
func Message(m weft.LLMMessage) int { return message(m, Text) }

// Bound returns an upper bound of Message(m) without encoding: a token is at least one byte.
func Bound(m weft.LLMMessage) int { return message(m, func(s string) int { return len(s) }) }

func message(m weft.LLMMessage, text func(string) int) int {
	n := PerMessage + text(m.Name)
	if len(m.Parts) == 0 {
		n += text(m.Content)
	}
	for _, p := range m.Parts {
		switch p.Type {
		case weft.PartText:
			n += text(p.Text)
		default:
			n += ImageTokens
		}
	}
	for _, c := range m.ToolCalls {
		n += PerMessage + text(c.Name) + text(c.Arguments)
	}
	return n
}

// Tools returns the tokens of the tool definitions a request offers.
func Tools(specs []weft.ToolSpec) int { return tools(specs, Text) }

func tools(specs []weft.ToolSpec, text func(string) int) int {
	n := 0
	for _, t := range specs {
		b, err := json.Marshal(t)
		if err != nil {
			continue
		}
		n += PerMessage + text(string(b))
	}
	return n
}

// Counter counts as Text, Message and Tools do, remembering the counts of the texts it saw: a
// thread's history is sent again at every step, and encoding costs about 3 µs a byte. Its memory is
// bounded (it forgets everything past maxRemembered texts). Safe for concurrent use; the zero value
// is ready.
type Counter struct {
	mu   sync.Mutex
	seen map[string]int
}

const (
	// maxRemembered bounds the texts a Counter keeps; minRemembered is the shortest it keeps.
	maxRemembered = 8192
	minRemembered = 64
)

// Text returns the tokens of s.
func (c *Counter) Text(s string) int {
	if len(s) < minRemembered {
		return Text(s)
	}
	c.mu.Lock()
	n, ok := c.seen[s]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = Text(s)
	c.mu.Lock()
	if c.seen == nil || len(c.seen) >= maxRemembered {
		c.seen = make(map[string]int)
	}
	c.seen[s] = n
	c.mu.Unlock()
	return n
}

// Message is Message, with c's memory.
func (c *Counter) Message(m weft.LLMMessage) int { return message(m, c.Text) }

// Tools is Tools, with c's memory.
func (c *Counter) Tools(specs []weft.ToolSpec) int { return tools(specs, c.Text) }
