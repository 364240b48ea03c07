package weft

import (
	"errors"
	"fmt"
	"strings"
)

// Code classifies an error for callers: the HTTP API maps it to a status and the CLI to an exit code,
// each in one place.
type Code string

// The error codes.
const (
	// EInvalid: the input is malformed or breaks a rule (bad definitions, bad arguments).
	EInvalid Code = "invalid"
	// ENotFound: the named thing does not exist (or is not visible to the caller).
	ENotFound Code = "not_found"
	// EConflict: the request conflicts with current state (thread running, terminated, name taken).
	EConflict Code = "conflict"
	// EMissingVariables: thread creation found required variables without values.
	EMissingVariables Code = "missing_required_variables"
	// EUnauthorized: no or invalid credentials.
	EUnauthorized Code = "unauthorized"
	// EForbidden: valid credentials without the right.
	EForbidden Code = "forbidden"
	// EUnavailable: a dependency (the store) is down, restarting or full; the same request can
	// succeed later.
	EUnavailable Code = "unavailable"
	// EInternal: a fault of Weft or of something it depends on.
	EInternal Code = "internal"
)

// ErrUnavailable marks a failure of a dependency that is down, restarting or full (a refused
// connection, a database restarting, a full disk): retrying later can succeed.
var ErrUnavailable = errors.New("unavailable")

// UnavailableTeller is implemented by stores that can tell, from one of their errors, that the
// database is unavailable for now (ErrUnavailable) rather than that the request failed.
type UnavailableTeller interface {
	Unavailable(err error) bool
}

// Unavailable reports whether err says that a dependency is unavailable for now: it wraps
// ErrUnavailable, or st (when it is an UnavailableTeller) says so.
func Unavailable(st any, err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	t, ok := st.(UnavailableTeller)
	return ok && t.Unavailable(err)
}

// Error is a Weft error with a code and a message meant for people.
type Error struct {
	// Code classifies the error.
	Code Code
	// Message is the human-readable text; it never contains a secret.
	Message string
	// Err is the underlying cause, if any.
	Err error
}

// Error returns the message, followed by the cause when there is one.
func (e *Error) Error() string {
	if e.Err != nil && e.Message != "" {
		return e.Message + ": " + e.Err.Error()
	}
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EInternal for any other non-nil error
// and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrEnvNotFound):
		return ENotFound
	case errors.Is(err, ErrTerminated):
		return EConflict
	case errors.Is(err, ErrThreadFull):
		return EInvalid
	case errors.Is(err, ErrBusy):
		return EConflict
	case errors.Is(err, ErrUnavailable):
		return EUnavailable
	}
	return EInternal
}

// Sentinel errors returned by State methods and stores (threadstate.md).
var (
	ErrNotFound      = errors.New("not found")
	ErrEnvNotFound   = errors.New("environment variable not found")
	ErrTerminated    = errors.New("thread is terminated")
	ErrNoParent      = errors.New("thread has no parent")
	ErrNotInRun      = errors.New("not inside a run")
	ErrUnknownTool   = errors.New("unknown tool")
	ErrUnknownEffect = errors.New("unknown effect")
	ErrInvalidPath   = errors.New("invalid path")
	ErrLeaseLost     = errors.New("lease lost")
	// ErrThreadFull: a queue push with QueuedMessage.MaxMessages found the thread that long.
	ErrThreadFull = errors.New("thread holds its maximum of messages")
	// ErrBusy: a queue push with IfBusyReject found a run of the thread in progress.
	ErrBusy = errors.New("thread has a run in progress")
)

// BusyError is how a store refuses a queue push with IfBusyReject to a thread whose run is in
// progress (its status running, or its lease live); errors.Is(err, ErrBusy) holds. The engine
// fills RunID when it can tell the run.
type BusyError struct {
	ThreadID string
	// RunID is the running run's id ("" when unknown).
	RunID string
}

func (e *BusyError) Error() string {
	if e.RunID != "" {
		return fmt.Sprintf("thread %s has a run in progress (%s)", e.ThreadID, e.RunID)
	}
	return fmt.Sprintf("thread %s has a run in progress", e.ThreadID)
}

// Is makes the error ErrBusy.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// ThreadFullError is how a store refuses a queue push with QueuedMessage.MaxMessages to a thread
// that long; errors.Is(err, ErrThreadFull) holds.
type ThreadFullError struct {
	ThreadID string
	Messages int64 // the seq of the thread's newest message
}

func (e *ThreadFullError) Error() string {
	return fmt.Sprintf("thread %s holds %d messages", e.ThreadID, e.Messages)
}

// Is makes the error ErrThreadFull.
func (e *ThreadFullError) Is(target error) bool { return target == ErrThreadFull }

// Severity says whether a diagnostic rejects the definitions.
type Severity string

// The severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Diagnostic is one problem found in the definitions: where (file or go:<kind>/<name>, and field
// path) and what rule it breaks.
type Diagnostic struct {
	// Source is the definition file relative to the project root, or go:<kind>/<name> for Go values.
	Source string `json:"file"`
	// Path is the field path within the definition, e.g. tools[2].initUserMessageProperty; may be empty.
	Path string `json:"path"`
	// Message states the rule that is broken.
	Message string `json:"message"`
	// Severity is error or warning.
	Severity Severity `json:"-"`
	// Line and Column locate syntax errors in the file (1-based; 0 when unknown).
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
}

// String renders the diagnostic as `file: path: message` (with line:column for syntax errors).
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.Source)
	if d.Line > 0 {
		fmt.Fprintf(&b, ":%d", d.Line)
		if d.Column > 0 {
			fmt.Fprintf(&b, ":%d", d.Column)
		}
	}
	b.WriteString(": ")
	if d.Path != "" {
		b.WriteString(d.Path)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	return b.String()
}

// Diagnostics is the result of validating a set of definitions: every problem, never just the first.
type Diagnostics []Diagnostic

// Errors returns the error-severity diagnostics.
func (ds Diagnostics) Errors() Diagnostics { return ds.filter(SeverityError) }

// Warnings returns the warning-severity diagnostics.
func (ds Diagnostics) Warnings() Diagnostics { return ds.filter(SeverityWarning) }

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

func (ds Diagnostics) filter(s Severity) Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.Severity == s {
			out = append(out, d)
		}
	}
	return out
}

// Err returns nil when there are no errors, else a *DefinitionError carrying all diagnostics.
func (ds Diagnostics) Err() error {
	if !ds.HasErrors() {
		return nil
	}
	return &DefinitionError{Diagnostics: ds}
}

// DefinitionError reports invalid definitions; its message lists every error, one per line.
type DefinitionError struct {
	// Diagnostics holds errors and warnings.
	Diagnostics Diagnostics
}

// Error lists the error diagnostics, one per line.
func (e *DefinitionError) Error() string {
	errs := e.Diagnostics.Errors()
	lines := make([]string, len(errs))
	for i, d := range errs {
		lines[i] = d.String()
	}
	return "invalid definitions:\n" + strings.Join(lines, "\n")
}
