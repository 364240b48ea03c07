package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/schema"
)

// The API's error codes beyond the domain's (weft.Code): request-level failures.
const (
	codeBadRequest       = "bad_request"
	codeValidation       = "validation_failed"
	codeTerminated       = "thread_terminated"
	codeRunning          = "thread_running"
	codeThreadBusy       = "thread_busy"
	codePayloadTooLarge  = "payload_too_large"
	codeMissingVariables = "missing_required_variables"
	codeTooManyTickets   = "too_many_tickets"
	codeUnavailable      = "store_unavailable"
)

// unavailableRetry is the Retry-After of an answer given while the store is unavailable.
const unavailableRetry = 2 * time.Second

// apiError is an error answered with a status and a code of the API.
type apiError struct {
	status  int
	code    string
	message string
	details map[string]any
	// retryAfter, when set, is answered as Retry-After (whole seconds, at least 1).
	retryAfter time.Duration
}

func (e *apiError) Error() string { return e.message }

func badRequest(msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: codeBadRequest, message: msg}
}

// statusOf is the one mapping from domain error codes to HTTP status and API code.
func statusOf(err error) (int, string) {
	if errors.Is(err, weft.ErrTerminated) {
		return http.StatusConflict, codeTerminated
	}
	switch weft.ErrorCode(err) {
	case weft.EInvalid:
		return http.StatusBadRequest, codeBadRequest
	case weft.ENotFound:
		return http.StatusNotFound, string(weft.ENotFound)
	case weft.EConflict:
		return http.StatusConflict, string(weft.EConflict)
	case weft.EMissingVariables:
		return http.StatusUnprocessableEntity, codeMissingVariables
	case weft.EUnauthorized:
		return http.StatusUnauthorized, string(weft.EUnauthorized)
	case weft.EForbidden:
		return http.StatusForbidden, string(weft.EForbidden)
	case weft.EUnavailable:
		return http.StatusServiceUnavailable, codeUnavailable
	}
	return http.StatusInternalServerError, string(weft.EInternal)
}

// writeError answers err as {"error": {code, message, …details}}. Internal errors are logged and
// answered with a generic message: their text may name paths or queries, never meant for clients.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	body := map[string]any{}
	var status int
	var ae *apiError
	var mv *engine.MissingVariablesError
	var ve *schema.ValidationError
	var be *weft.BusyError
	switch {
	case errors.As(err, &be):
		// A message with if_busy reject while a run is in progress: which run.
		status = http.StatusConflict
		body["code"], body["message"], body["run_id"] = codeThreadBusy, be.Error(), be.RunID
	case errors.As(err, &ve) && weft.ErrorCode(err) == weft.EInvalid:
		// Arguments that break a schema: every failure with its JSON pointer.
		status = http.StatusBadRequest
		body["code"], body["message"] = codeValidation, err.Error()
		list := make([]map[string]string, len(ve.Failures))
		for i, f := range ve.Failures {
			list[i] = map[string]string{"path": f.Path, "message": f.Message}
		}
		body["errors"] = list
	case errors.As(err, &ae):
		status = ae.status
		body["code"], body["message"] = ae.code, ae.message
		if ae.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int((ae.retryAfter+time.Second-1)/time.Second))))
		}
		for k, v := range ae.details {
			body[k] = v
		}
	case errors.As(err, &mv):
		status = http.StatusUnprocessableEntity
		body["code"], body["message"] = codeMissingVariables, mv.Error()
		missing := make([]map[string]any, len(mv.Missing))
		for i, m := range mv.Missing {
			missing[i] = map[string]any{"name": m.Name, "declared_by": m.DeclaredBy}
		}
		body["missing"] = missing
	case s.unavailable(err):
		// The store is down, restarting or full: the client retries later (never an internal error).
		status = http.StatusServiceUnavailable
		body["code"], body["message"] = codeUnavailable, "the store is unavailable for now; retry later"
		w.Header().Set("Retry-After", strconv.Itoa(int(unavailableRetry/time.Second)))
		s.log.WarnContext(r.Context(), "store unavailable", "method", r.Method, "path", r.URL.Path, "error", err)
	default:
		var code string
		status, code = statusOf(err)
		body["code"], body["message"] = code, err.Error()
		if status == http.StatusInternalServerError {
			s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "error", err)
			body["message"] = "internal error"
		}
	}
	writeJSON(w, status, map[string]any{"error": body})
}

// unavailable reports whether err says that the store is unavailable for now.
func (s *Server) unavailable(err error) bool {
	if weft.ErrorCode(err) == weft.EUnavailable {
		return true
	}
	if e := s.engine(); e != nil && weft.Unavailable(e.Store(), err) {
		return true
	}
	return weft.Unavailable(s.opt.Auth, err)
}

// writeJSON answers v as JSON with the status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
