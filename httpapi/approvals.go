package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// listToolCalls lists the thread's tool-call records in call order: status, result message,
// and meta (the approval state among it), arguments redacted.
func (s *Server) listToolCalls(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	eng := s.engine()
	recs, err := eng.Store().ToolCalls(r.Context(), t.ID)
	if err != nil {
		return err
	}
	red, err := eng.Redactor(r.Context(), t.ID)
	if err != nil {
		return err
	}
	for i := range recs {
		recs[i].Arguments = red(recs[i].Arguments)
		if len(recs[i].Meta) > 0 {
			recs[i].Meta = redactJSON(recs[i].Meta, red)
		}
	}
	if recs == nil {
		recs = []weft.ToolCallRecord{}
	}
	writeJSON(w, http.StatusOK, recs)
	return nil
}

// listApprovals lists the thread's tool calls that wait for a person's decision.
func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	eng := s.engine()
	recs, err := eng.PendingApprovals(r.Context(), t.ID)
	if err != nil {
		return err
	}
	red, err := eng.Redactor(r.Context(), t.ID)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(recs))
	for i, rec := range recs {
		out[i] = map[string]any{"call_id": rec.CallID, "name": rec.Name, "arguments": red(rec.Arguments),
			"message_id": rec.MessageID, "seq": rec.Seq}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// decide records a decision on a waiting call; once no call of the reply waits, the run goes on.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	var b struct {
		Approve   *bool           `json:"approve"`
		Arguments json.RawMessage `json:"arguments"`
		Reason    string          `json:"reason"`
	}
	if err := decodeJSON(w, r, maxJSONBody, &b, false); err != nil {
		return err
	}
	if b.Approve == nil {
		return validation("approve", "approve is required (true or false)")
	}
	if len(b.Arguments) > 0 && !*b.Approve {
		return validation("arguments", "arguments apply to an approval only")
	}
	ready, err := s.engine().Decide(r.Context(), t.ID, r.PathValue("call_id"),
		engine.Decision{Approve: *b.Approve, Arguments: b.Arguments, Reason: b.Reason, By: p.userID})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ready": ready})
	return nil
}
