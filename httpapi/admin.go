package httpapi

import (
	"net/http"
	"sort"

	"github.com/weft-agents/weft"
)

// agentJSON describes an agent without its env values (which may be secrets): only their names.
func agentJSON(a *weft.Agent) map[string]any {
	env := make([]string, 0, len(a.Env))
	for k := range a.Env {
		env = append(env, k)
	}
	sort.Strings(env)
	out := map[string]any{"name": a.Name, "type": a.Kind(), "description": a.Description, "icon": a.Icon,
		"side_a": a.SideA, "max_session_turns": a.MaxSessionTurns, "expose_as_tool": a.ExposeAsTool,
		"tool_description": a.ToolDescription, "env_names": env, "hooks": a.Hooks}
	if a.SideB != nil {
		out["side_b"] = a.SideB
	}
	return out
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request, p *principal) error {
	as := s.engine().Registry().Agents()
	out := make([]map[string]any, 0, len(as))
	for _, a := range as {
		if !a.Internal {
			out = append(out, agentJSON(a))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request, p *principal) error {
	a, ok := s.engine().Registry().Agent(r.PathValue("name"))
	if !ok {
		return weft.Errorf(weft.ENotFound, "no agent named %q", r.PathValue("name"))
	}
	writeJSON(w, http.StatusOK, agentJSON(a))
	return nil
}

// agentVariables lists the required and optional variables of an agent's graph (never values).
func (s *Server) agentVariables(w http.ResponseWriter, r *http.Request, p *principal) error {
	vars, err := s.engine().AgentVariables(r.PathValue("name"))
	if err != nil {
		return err
	}
	var required, optional []map[string]any
	for _, v := range vars {
		row := map[string]any{"name": v.Name, "type": v.Type, "description": v.Description, "scoped": v.Scoped,
			"declared_by": v.DeclaredBy, "has_default": v.HasDefault}
		if v.Required {
			required = append(required, row)
		} else {
			optional = append(optional, row)
		}
	}
	if required == nil {
		required = []map[string]any{}
	}
	if optional == nil {
		optional = []map[string]any{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"agent": r.PathValue("name"), "required": required, "optional": optional})
	return nil
}

// listNames lists the names (and sources) of one kind of definition.
func (s *Server) listNames(kind string) handler {
	return func(w http.ResponseWriter, r *http.Request, p *principal) error {
		reg := s.engine().Registry()
		var names []string
		switch kind {
		case "prompt":
			for _, x := range reg.Prompts() {
				names = append(names, x.Name)
			}
		case "model":
			for _, x := range reg.Models() {
				names = append(names, x.Name)
			}
		case "tool":
			for _, x := range reg.Tools() {
				names = append(names, x.Name)
			}
		case "provider":
			for _, x := range reg.Providers() {
				names = append(names, x.Name)
			}
		}
		out := make([]map[string]string, len(names))
		for i, n := range names {
			out[i] = map[string]string{"name": n, "source": reg.Source(kind, n)}
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
}

// getDefinition returns one definition.
func (s *Server) getDefinition(kind string) handler {
	return func(w http.ResponseWriter, r *http.Request, p *principal) error {
		reg := s.engine().Registry()
		name := r.PathValue("name")
		switch kind {
		case "prompt":
			if x, ok := reg.Prompt(name); ok {
				// Env values may be secrets: only their names are shown.
				out, err := merge(x, nil)
				if err != nil {
					return err
				}
				names := make([]string, 0, len(x.Env))
				for k := range x.Env {
					names = append(names, k)
				}
				sort.Strings(names)
				delete(out, "env")
				out["env_names"] = names
				writeJSON(w, http.StatusOK, out)
				return nil
			}
		}
		return weft.Errorf(weft.ENotFound, "no %s named %q", kind, name)
	}
}

// envOwner is the owner of a scope's values for the principal.
func envOwner(scope weft.EnvScope, p *principal) string {
	if scope == weft.EnvUser {
		return p.userID
	}
	return ""
}

func (s *Server) listEnv(scope weft.EnvScope) handler {
	return func(w http.ResponseWriter, r *http.Request, p *principal) error {
		vals, err := s.engine().Store().Env(r.Context(), scope, envOwner(scope, p))
		if err != nil {
			return err
		}
		rows := make([]envRow, len(vals))
		for i, v := range vals {
			rows[i] = rowOf(v, string(scope))
		}
		writeJSON(w, http.StatusOK, rows)
		return nil
	}
}

// getEnv describes one variable of a scope (its value only when its type is text).
func (s *Server) getEnv(scope weft.EnvScope) handler {
	return func(w http.ResponseWriter, r *http.Request, p *principal) error {
		vals, err := s.engine().Store().Env(r.Context(), scope, envOwner(scope, p))
		if err != nil {
			return err
		}
		for _, v := range vals {
			if v.Name == r.PathValue("name") {
				writeJSON(w, http.StatusOK, rowOf(v, string(scope)))
				return nil
			}
		}
		return weft.Errorf(weft.ENotFound, "no %s variable %s", scope, r.PathValue("name"))
	}
}

func (s *Server) putEnv(scope weft.EnvScope) handler {
	return func(w http.ResponseWriter, r *http.Request, p *principal) error {
		var b struct {
			Value string       `json:"value"`
			Type  weft.VarType `json:"type"`
		}
		if err := decodeJSON(w, r, maxJSONBody, &b, false); err != nil {
			return err
		}
		if b.Type == "" {
			b.Type = weft.VarSecret
		}
		if b.Type != weft.VarText && b.Type != weft.VarSecret {
			return validation("type", "type must be text or secret")
		}
		v := weft.EnvValue{Name: r.PathValue("name"), Value: b.Value, Type: b.Type}
		if err := s.engine().Store().SetEnv(r.Context(), scope, envOwner(scope, p), []weft.EnvValue{v}); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, rowOf(v, string(scope)))
		return nil
	}
}

func (s *Server) deleteEnv(scope weft.EnvScope) handler {
	return func(w http.ResponseWriter, r *http.Request, p *principal) error {
		v := weft.EnvValue{Name: r.PathValue("name"), Delete: true}
		if err := s.engine().Store().SetEnv(r.Context(), scope, envOwner(scope, p), []weft.EnvValue{v}); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}

func (s *Server) authStore() (weft.AuthStore, error) {
	if s.opt.Auth == nil {
		return nil, weft.Errorf(weft.EConflict, "this server keeps no users (it runs without auth)")
	}
	return s.opt.Auth, nil
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request, p *principal) error {
	as, err := s.authStore()
	if err != nil {
		return err
	}
	var b struct {
		Name    string `json:"name"`
		IsAdmin bool   `json:"is_admin"`
	}
	if err := decodeJSON(w, r, maxJSONBody, &b, false); err != nil {
		return err
	}
	if b.Name == "" {
		return validation("name", "a user needs a name")
	}
	u := &weft.User{Name: b.Name, IsAdmin: b.IsAdmin}
	if err := as.CreateUser(r.Context(), u); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, u)
	return nil
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, p *principal) error {
	as, err := s.authStore()
	if err != nil {
		return err
	}
	us, err := as.Users(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, us)
	return nil
}

// createKey creates a key for the caller, or (admins) for any user; the key is in this answer
// only.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request, p *principal) error {
	as, err := s.authStore()
	if err != nil {
		return err
	}
	var b struct {
		UserID string `json:"user_id"`
	}
	if err := decodeJSON(w, r, maxJSONBody, &b, true); err != nil {
		return err
	}
	uid := p.userID
	if b.UserID != "" && b.UserID != p.userID {
		if !p.admin {
			return &apiError{status: http.StatusForbidden, code: string(weft.EForbidden), message: "only admins create keys for other users"}
		}
		uid = b.UserID
	}
	key, rec := weft.NewAPIKey(uid)
	if err := as.CreateKey(r.Context(), rec); err != nil {
		if weft.ErrorCode(err) == weft.ENotFound {
			return validation("user_id", "no user "+uid)
		}
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": rec.ID, "key": key, "user_id": uid})
	return nil
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request, p *principal) error {
	as, err := s.authStore()
	if err != nil {
		return err
	}
	uid := p.userID
	if p.admin {
		uid = r.URL.Query().Get("user_id")
	}
	ks, err := as.Keys(r.Context(), uid)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ks)
	return nil
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request, p *principal) error {
	as, err := s.authStore()
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	if !p.admin {
		ks, err := as.Keys(r.Context(), p.userID)
		if err != nil {
			return err
		}
		mine := false
		for _, k := range ks {
			mine = mine || k.ID == id
		}
		if !mine {
			return weft.Errorf(weft.ENotFound, "no key %s", id)
		}
	}
	if err := as.RevokeKey(r.Context(), id); err != nil {
		return err
	}
	s.keyRevoked()
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) issueTicket(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b struct {
		Path string `json:"path"`
	}
	if err := decodeJSON(w, r, maxJSONBody, &b, false); err != nil {
		return err
	}
	t, exp, err := s.tickets.issue(p, b.Path)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"ticket": t, "expires_at": exp.UTC()})
	return nil
}
