package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/weft-agents/weft"
)

// routes registers every route of the API.
func (s *Server) routes() {
	s.mux.HandleFunc("GET /api/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": s.opt.Version})
	})
	s.mux.HandleFunc("GET /api/ready", func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "starting"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready"})
	})
	s.mux.HandleFunc("/api/", s.noRoute)
	if s.opt.Pages != nil {
		s.mux.Handle("/", s.opt.Pages)
	}
	s.mcpRoute()
	s.oauthRoutes()
	if s.opt.A2A != nil {
		s.handle("/a2a/", func(w http.ResponseWriter, r *http.Request, p *principal) error {
			// Replaces whatever the client sent.
			r.Header.Set("Weft-A2a-User", p.userID)
			r.Header.Set("Weft-A2a-Admin", strconv.FormatBool(p.admin))
			if r.Method == http.MethodPost {
				// A message with its files, as POST /api/threads/{id}/messages takes: 413 over it.
				b, err := readBody(w, r, maxMessageBody)
				if err != nil {
					return err
				}
				r.Body = io.NopCloser(bytes.NewReader(b))
			}
			s.opt.A2A.ServeHTTP(w, r)
			return nil
		})
	}

	s.handle("POST /api/threads", s.createThread)
	s.handle("GET /api/threads", s.listThreads)
	s.handle("GET /api/threads/{id}", s.getThread)
	s.handle("PATCH /api/threads/{id}", s.patchThread)
	s.handle("DELETE /api/threads/{id}", s.deleteThread)
	s.handle("POST /api/threads/{id}/messages", s.postMessage)
	s.handle("GET /api/threads/{id}/messages", s.listMessages)
	s.handle("GET /api/threads/{id}/messages/{mid}", s.getMessage)
	s.handle("POST /api/threads/{id}/messages/{mid}/edit", s.editMessage)
	s.handle("POST /api/threads/{id}/messages/{mid}/retry", s.retryMessage)
	s.handle("POST /api/threads/{id}/fork", s.forkThread)
	s.handle("POST /api/threads/{id}/stop", s.stopThread)
	s.handle("POST /api/threads/{id}/continue", s.continueThread)
	s.handle("POST /api/threads/{id}/terminate", s.terminateThread)
	s.handle("GET /api/threads/{id}/logs", s.listLogs)
	s.handle("GET /api/threads/{id}/logs/{log_id}", s.getLog)
	s.handle("GET /api/threads/{id}/cost", s.getCost)
	s.handle("GET /api/threads/{id}/subagents", s.listSubagents)
	s.handle("GET /api/threads/{id}/env", s.threadEnv)
	s.handle("GET /api/threads/{id}/kv", s.listKV)
	s.handle("GET /api/threads/{id}/kv/{key}", s.getKV)
	s.handle("PUT /api/threads/{id}/kv/{key}", s.putKV)
	s.handle("DELETE /api/threads/{id}/kv/{key}", s.deleteKV)
	s.handle("GET /api/threads/{id}/fs/{path...}", fileRoute(s.getFile))
	s.handle("PUT /api/threads/{id}/fs/{path...}", fileRoute(s.putFile))
	s.handle("DELETE /api/threads/{id}/fs/{path...}", fileRoute(s.deleteFile))
	s.handle("GET /api/threads/{id}/fs-search", fileRoute(s.searchFiles))
	s.handle("GET /api/threads/{id}/effects", s.listEffects)
	s.handle("DELETE /api/threads/{id}/effects/{eff}", s.cancelEffect)
	s.handle("GET /api/threads/{id}/variables/{request_id}", s.getEnvRequest)
	s.handle("POST /api/threads/{id}/variables/{request_id}", s.provideEnv)
	s.handle("GET /api/threads/{id}/tool-calls", s.listToolCalls)
	s.handle("GET /api/threads/{id}/approvals", s.listApprovals)
	s.handle("POST /api/threads/{id}/approvals/{call_id}", s.decide)
	s.handle("POST /api/threads/{id}/tool-calls/{call_id}/decision", s.decide)
	s.handle("GET /api/threads/{id}/a2a/tasks", s.threadTasks)
	s.handle("GET /api/threads/{id}/events", s.threadSSE)
	s.handle("GET /api/threads/{id}/stream", s.threadWebSocket)
	s.handle("GET /api/events", s.globalSSE)

	s.handle("POST /api/evals", admin(s.runEval))
	s.handle("GET /api/evals", admin(s.listEvalRuns))
	s.handle("GET /api/evals/{id}", admin(s.getEvalRun))

	s.handle("GET /api/agents", s.listAgents)
	s.handle("GET /api/agents/{name}", s.getAgent)
	s.handle("GET /api/variables/agents/{name}", s.agentVariables)
	s.handle("GET /api/prompts", admin(s.listNames("prompt")))
	s.handle("GET /api/prompts/{name}", admin(s.getDefinition("prompt")))
	s.handle("GET /api/models", admin(s.listNames("model")))
	s.handle("GET /api/tools", admin(s.listNames("tool")))
	s.handle("GET /api/providers", admin(s.listNames("provider")))
	s.handle("GET /api/env/instance", admin(s.listEnv(weft.EnvInstance)))
	s.handle("GET /api/env/instance/{name}", admin(s.getEnv(weft.EnvInstance)))
	s.handle("GET /api/users/me/env/{name}", s.getEnv(weft.EnvUser))
	s.handle("PUT /api/env/instance/{name}", admin(s.putEnv(weft.EnvInstance)))
	s.handle("DELETE /api/env/instance/{name}", admin(s.deleteEnv(weft.EnvInstance)))
	s.handle("GET /api/users/me/env", s.listEnv(weft.EnvUser))
	s.handle("PUT /api/users/me/env/{name}", s.putEnv(weft.EnvUser))
	s.handle("DELETE /api/users/me/env/{name}", s.deleteEnv(weft.EnvUser))
	s.handle("POST /api/users", admin(s.createUser))
	s.handle("GET /api/users", admin(s.listUsers))
	s.handle("POST /api/keys", s.createKey)
	s.handle("GET /api/keys", s.listKeys)
	s.handle("DELETE /api/keys/{id}", s.revokeKey)
	s.handle("POST /api/auth/ws-ticket", s.issueTicket)
}

// noRoute answers a request no route takes: 405 with the allowed methods when the path exists
// with other methods, else 404.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/api/" && pattern != "" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		s.writeError(w, r, &apiError{status: http.StatusMethodNotAllowed, code: codeBadRequest,
			message: r.Method + " " + r.URL.Path + " is not allowed; use " + strings.Join(allowed, ", ")})
		return
	}
	s.writeError(w, r, &apiError{status: http.StatusNotFound, code: string(weft.ENotFound), message: "no route " + r.Method + " " + r.URL.Path})
}
