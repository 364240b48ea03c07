package engine

import (
	"context"

	"github.com/weft-agents/weft"
)

// Fork makes a new thread owned by owner from threadID's history up to and including the
// top-level message atID, and returns it; the original is only read (fork.Forker.Fork says what
// a fork copies, shares and leaves behind; docs/forks.md at length). An unknown message, or one
// inside a sub-prompt, is ENotFound or EInvalid; a message still being written (pending) is
// EConflict.
func (e *Engine) Fork(ctx context.Context, threadID, atID, owner string) (*weft.Thread, error) {
	return e.forks.Fork(ctx, threadID, atID, owner, false)
}

// ForkBefore is Fork without the message beforeID itself: the fork holds what came before it
// (but still every result of a tool turn it copies). Editing a user message forks before it and
// sends the new text; retrying an assistant message forks before it and continues.
func (e *Engine) ForkBefore(ctx context.Context, threadID, beforeID, owner string) (*weft.Thread, error) {
	return e.forks.Fork(ctx, threadID, beforeID, owner, true)
}
