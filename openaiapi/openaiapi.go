// Package openaiapi serves an OpenAI-compatible API under /v1 on the same server, users, keys,
// limits and redaction as /api: GET /v1/models lists the agents, POST /v1/chat/completions and
// POST /v1/responses run one (model = agent name) on a Weft thread, and GET /v1/responses/{id}
// reads a response back. It translates the protocol-neutral parts of package turn; the engine
// knows nothing of OpenAI. docs/openai-api.md describes the mapping.
package openaiapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/httpapi"
)

// ThreadHeader names the Weft thread a chat completion continues (request) and the thread a
// completion ran on (response).
const ThreadHeader = "Weft-Thread-Id"

// maxBody bounds a request body (a message with its history), as /api bounds a posted message.
const maxBody = weft.MaxMessageBytes

// Handler serves the /v1 routes.
type Handler struct {
	api *httpapi.Server
	// now is the clock of the created timestamps.
	now func() time.Time
	// ping is the keep-alive period of a stream.
	ping time.Duration
}

// Register mounts the /v1 routes on the API server.
func Register(api *httpapi.Server) *Handler {
	h := &Handler{api: api, now: time.Now, ping: 15 * time.Second}
	api.Mount("GET /v1/models", h.route(h.listModels))
	api.Mount("GET /v1/models/{model}", h.route(h.getModel))
	api.Mount("POST /v1/chat/completions", h.route(h.chatCompletions))
	api.Mount("POST /v1/responses", h.route(h.createResponse))
	api.Mount("GET /v1/responses/{id}", h.route(h.getResponse))
	api.Mount("/v1/", h.route(func(w http.ResponseWriter, r *http.Request, _ httpapi.Caller) error {
		return &apiError{status: http.StatusNotFound, typ: typeInvalidRequest, code: "unknown_url",
			message: "Unknown request URL: " + r.Method + " " + r.URL.Path + "."}
	}))
	return h
}

// handlerFunc is an authenticated route; its error is answered in OpenAI's error shape.
type handlerFunc func(w http.ResponseWriter, r *http.Request, c httpapi.Caller) error

func (h *Handler) route(f handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := h.api.Authenticate(r)
		if err == nil {
			err = f(w, r, c)
		}
		if err != nil {
			h.writeError(w, r, err)
		}
	})
}

// The error types of OpenAI's error shape.
const (
	typeInvalidRequest = "invalid_request_error"
	typeAuthentication = "authentication_error"
	typeNotFound       = "not_found_error"
	typeRateLimit      = "rate_limit_error"
	typeServer         = "server_error"
)

// apiError is an error in OpenAI's shape: {"error": {message, type, param, code}}.
type apiError struct {
	status  int
	typ     string
	code    string
	param   string
	message string
}

func (e *apiError) Error() string { return e.message }

func (e *apiError) body() map[string]any {
	var param, code any
	if e.param != "" {
		param = e.param
	}
	if e.code != "" {
		code = e.code
	}
	return map[string]any{"error": map[string]any{"message": e.message, "type": e.typ, "param": param, "code": code}}
}

func invalid(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: typeInvalidRequest, param: param, message: fmt.Sprintf(format, args...)}
}

// unknownModel is the 404 of a model (agent) that does not exist, as OpenAI words it.
func unknownModel(name string) *apiError {
	return &apiError{status: http.StatusNotFound, typ: typeInvalidRequest, param: "model", code: "model_not_found",
		message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", name)}
}

// asAPIError maps any error to OpenAI's shape, with the status /api gives it.
func (h *Handler) asAPIError(r *http.Request, err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	status, msg := h.api.ErrorStatus(r, err)
	e := &apiError{status: status, typ: typeInvalidRequest, message: msg}
	switch {
	case status == http.StatusUnauthorized:
		e.typ, e.code = typeAuthentication, "invalid_api_key"
	case status == http.StatusNotFound:
		e.typ, e.code = typeNotFound, "not_found"
	case status == http.StatusConflict:
		e.code = "conflict"
	case status == http.StatusRequestEntityTooLarge:
		e.code = "request_too_large"
	case status >= 500:
		e.typ, e.code = typeServer, "server_error"
	}
	return e
}

// writeError answers err in OpenAI's error shape.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := h.asAPIError(r, err)
	writeJSON(w, ae.status, ae.body())
}

// writeJSON answers v as JSON with the status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// decodeBody reads a JSON body of at most maxBody bytes into dst. Fields this API does not use
// (sampling parameters and the like) are ignored, as an OpenAI-compatible server must take what
// every client sends; the agent's own model settings apply.
func decodeBody(w http.ResponseWriter, r *http.Request, dst any) error {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &apiError{status: http.StatusRequestEntityTooLarge, typ: typeInvalidRequest, code: "request_too_large",
			message: fmt.Sprintf("The request body is larger than %s.", weft.ByteSize(maxBody))}
	}
	if err != nil {
		return invalid("", "Reading the request body: %v", err)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return invalid(te.Field, "Invalid type for '%s': expected %s.", te.Field, te.Type)
		}
		return invalid("", "We could not parse the JSON body of your request: %v", err)
	}
	return nil
}

// model is an entry of GET /v1/models.
type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// models lists the agents a caller may run (those /api/agents lists), by name.
func (h *Handler) models() []model {
	var out []model
	for _, a := range h.api.Engine().Registry().Agents() {
		if !a.Internal {
			out = append(out, model{ID: a.Name, Object: "model", OwnedBy: "weft"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (h *Handler) listModels(w http.ResponseWriter, r *http.Request, _ httpapi.Caller) error {
	list := h.models()
	if list == nil {
		list = []model{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": list})
	return nil
}

func (h *Handler) getModel(w http.ResponseWriter, r *http.Request, _ httpapi.Caller) error {
	name := r.PathValue("model")
	for _, m := range h.models() {
		if m.ID == name {
			writeJSON(w, http.StatusOK, m)
			return nil
		}
	}
	return unknownModel(name)
}

// agentOf checks the model field names an agent the caller may run.
func (h *Handler) agentOf(name string) error {
	if name == "" {
		return invalid("model", "you must provide a model parameter (the name of a Weft agent)")
	}
	a, ok := h.api.Engine().Registry().Agent(name)
	if !ok || a.Internal {
		return unknownModel(name)
	}
	return nil
}
