package weft

import (
	"fmt"
	"io"
)

// Limits on what enters Weft. Input over a limit is refused with an error that names the limit;
// it is never cut. docs/limits.md lists them all.
const (
	// MaxMessageBytes bounds a posted message's text.
	MaxMessageBytes = 20 << 20
	// MaxAttachments bounds the attachments of one posted message.
	MaxAttachments = 32
	// MaxAttachmentBytes bounds one attachment, and MaxMessageAttachmentBytes all of one message's.
	MaxAttachmentBytes        = 20 << 20
	MaxMessageAttachmentBytes = 50 << 20
	// MaxToolArgumentsBytes and MaxToolArgumentsDepth bound one tool call's JSON arguments; a call
	// over them gets an error result the model reads instead of running.
	MaxToolArgumentsBytes = 1 << 20
	MaxToolArgumentsDepth = 64
	// MaxToolCallsPerReply bounds the calls one model reply may make: the calls past it are
	// answered with an error result, in order, and never run.
	MaxToolCallsPerReply = 128
	// MaxToolResultBytes bounds a tool's result text; a longer one is replaced by an error result
	// saying so (never cut).
	MaxToolResultBytes = 4 << 20
	// DefaultMaxThreadMessages bounds a thread's length: once it holds this many messages (counted
	// by seq, deleted ones included), a new posted message is refused (engine.Options.MaxThreadMessages
	// raises it). Context assembly and listings read a thread's messages, so an endless thread
	// would make every step slower.
	DefaultMaxThreadMessages = 100_000
)

// JSONDepth returns the deepest nesting of arrays and objects in a JSON text (0 for a scalar);
// it scans bytes, so it is cheap on any input, valid or not.
func JSONDepth(b []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// LimitError reports input over a limit.
func LimitError(what string, size, limit int64) error {
	return Errorf(EInvalid, "%s is %s; the limit is %s", what, ByteSize(size), ByteSize(limit))
}

// ByteSize formats a size in bytes for people: whole MiB or KiB as such (20 MiB), other sizes
// exactly (20,971,521 bytes), so that a size just over a limit does not read as the limit.
func ByteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s + " bytes"
}

// CheckNewMessage refuses a message over the limits on text and attachments.
func CheckNewMessage(m NewMessage) error {
	if len(m.Content) > MaxMessageBytes {
		return LimitError("the message", int64(len(m.Content)), MaxMessageBytes)
	}
	if len(m.Attachments) > MaxAttachments {
		return Errorf(EInvalid, "the message has %d attachments; the limit is %d", len(m.Attachments), MaxAttachments)
	}
	var total int64
	for _, a := range m.Attachments {
		n := int64(len(a.Data))
		if n > MaxAttachmentBytes {
			return LimitError(fmt.Sprintf("attachment %q", a.Name), n, MaxAttachmentBytes)
		}
		total += n
	}
	if total > MaxMessageAttachmentBytes {
		return Errorf(EInvalid, "the message's attachments total %s; the limit is %s", ByteSize(total), ByteSize(MaxMessageAttachmentBytes))
	}
	return nil
}

// LimitReply wraps a provider's response body so that reading past max bytes fails the attempt
// with a reply_too_large ProviderError (a stream that never ends cannot exhaust memory).
func LimitReply(body io.ReadCloser, max int64) io.ReadCloser {
	return &replyLimit{ReadCloser: body, left: max, max: max}
}

type replyLimit struct {
	io.ReadCloser
	left, max int64
}

func (r *replyLimit) Read(p []byte) (int, error) {
	if r.left <= 0 {
		// Exactly max bytes is fine: only a byte past them fails.
		var one [1]byte
		if n, err := r.ReadCloser.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		return 0, &ProviderError{Type: ErrReplyTooLarge, Message: fmt.Sprintf(
			"the reply is over the model's %s limit (maxReplyBytes in its definition raises it)", ByteSize(r.max))}
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.ReadCloser.Read(p)
	r.left -= int64(n)
	return n, err
}
