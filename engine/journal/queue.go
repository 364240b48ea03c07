package journal

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/weft-agents/weft"
)

// Waiting reports queued messages that the run has neither drained nor read, as of its last
// transaction.
func (j *Journal) Waiting() bool {
	return j.queueSeq > max(j.drainedUpTo, j.queueKnown)
}

// Queued returns the queue rows read and not yet drained (read-only).
func (j *Journal) Queued() []weft.QueuedMessage { return j.queued }

// ReadQueue reads the thread's queue, unless rows read before are still unread.
func (j *Journal) ReadQueue(ctx context.Context) error {
	if j.queued != nil {
		return nil
	}
	known := j.queueSeq
	q, err := j.c.cfg.Store.Queued(ctx, j.thread.ID)
	if err != nil {
		return err
	}
	j.queued, j.queueKnown = q, max(j.queueKnown, known)
	return nil
}

// Unread returns and forgets the queue rows read (at the run's start, or by ReadQueue); some may
// be taken already (Taken).
func (j *Journal) Unread() []weft.QueuedMessage {
	qs := j.queued
	j.queued = nil
	return qs
}

// Taken reports a queue row taken already: its insert waits for the next transaction.
func (j *Journal) Taken(seq int64) bool { return seq <= j.drainedUpTo }

// Take stages m, made of the queue row of seq, for the next transaction. m joins the context at
// once, as the user wrote it: a secret a user pasted is the last-line pass's to catch in the
// request (and count: under a model script the run then exits 5); the committer stores the row
// redacted, and the context has it so from then on.
func (j *Journal) Take(m *weft.Message, seq int64) {
	j.drained = append(j.drained, m)
	j.drainedUpTo = max(j.drainedUpTo, seq)
}

// Preview is a thread's preview of a message: its first 200 characters, trimmed. Only they are
// decoded: converting a whole message to runes cost four times its size (80 MiB for a message of
// 20 MiB).
func Preview(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= 200 {
		return s // no more runes than bytes: nothing to cut (nor to decode)
	}
	end := 0
	for n := 0; n < 200 && end < len(s); n++ {
		if s[end] < utf8.RuneSelf {
			end++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
	}
	if end == len(s) {
		return s
	}
	return string([]rune(s[:end])) // invalid UTF-8 replaced, as a conversion of all of s would
}

// Unstored is the number of messages taken whose insert waits for the next transaction.
func (j *Journal) Unstored() int { return len(j.drained) }
