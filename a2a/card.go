// Package a2a speaks the Agent2Agent protocol (v1.0, through github.com/a2aproject/a2a-go/v2) in
// both directions: a server that makes every agent a user may run an A2A agent, its tasks derived
// from the thread's recorded events (so any node of a shared store sees them, and they survive
// restarts), and a client that makes a remote A2A agent a Weft tool (kind: a2a). docs/a2a.md says
// how tasks map to runs and messages.
package a2a

import (
	"strings"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/weft-agents/weft"
)

// BearerScheme names the card's security scheme: the Weft API key as a bearer token.
const BearerScheme sdk.SecuritySchemeName = "weftApiKey"

// Card returns the agent card of the agent: its name and description, a skill per side's prompt
// and per tool those prompts may call, one JSON-RPC interface at rpcURL, streaming, and the API
// key as a bearer token. False when no such agent may be run (unknown or internal).
func Card(reg *weft.Registry, agent, rpcURL, version string) (*sdk.AgentCard, bool) {
	a, ok := reg.Agent(agent)
	if !ok || a.Internal {
		return nil, false
	}
	desc := a.Description
	if desc == "" {
		desc = a.ToolDescription
	}
	if desc == "" {
		desc = "The Weft agent " + a.Name + "."
	}
	if version == "" {
		version = "dev"
	}
	card := &sdk.AgentCard{
		Name:                a.Name,
		Description:         desc,
		Version:             version,
		SupportedInterfaces: []*sdk.AgentInterface{{URL: rpcURL, ProtocolBinding: sdk.TransportProtocolJSONRPC, ProtocolVersion: sdk.Version}},
		Capabilities:        sdk.AgentCapabilities{Streaming: true},
		DefaultInputModes:   []string{"text/plain", "application/octet-stream"},
		DefaultOutputModes:  []string{"text/plain", "application/octet-stream"},
		SecuritySchemes: sdk.NamedSecuritySchemes{BearerScheme: sdk.HTTPAuthSecurityScheme{Scheme: "Bearer",
			Description: "A Weft API key (weft keys create), sent as Authorization: Bearer KEY."}},
		SecurityRequirements: sdk.SecurityRequirementsOptions{{BearerScheme: sdk.SecuritySchemeScopes{}}},
		Skills:               skills(reg, a),
	}
	return card, true
}

// skills lists a skill per AI side's prompt, then one per tool those prompts offer, each once.
func skills(reg *weft.Registry, a *weft.Agent) []sdk.AgentSkill {
	out := []sdk.AgentSkill{}
	seen := map[string]bool{}
	sides := []weft.AgentSide{a.SideA}
	if a.SideB != nil {
		sides = append(sides, *a.SideB)
	}
	var tools []string
	for _, s := range sides {
		p, ok := reg.Prompt(s.Prompt)
		if !ok || seen["prompt:"+p.Name] {
			continue
		}
		seen["prompt:"+p.Name] = true
		desc := p.ToolDescription
		if desc == "" {
			desc = "Answers as the prompt " + p.Name + "."
		}
		out = append(out, sdk.AgentSkill{ID: "prompt:" + p.Name, Name: p.Name, Description: desc, Tags: []string{"prompt"}})
		for _, t := range p.Tools {
			tools = append(tools, t.Name)
		}
	}
	for _, name := range tools {
		if seen["tool:"+name] {
			continue
		}
		seen["tool:"+name] = true
		desc := "Uses the tool " + name + "."
		if t, ok := reg.Tool(name); ok && strings.TrimSpace(t.Description) != "" {
			desc = t.Description
		} else if p, ok := reg.Prompt(name); ok && p.ToolDescription != "" {
			desc = p.ToolDescription
		}
		out = append(out, sdk.AgentSkill{ID: "tool:" + name, Name: name, Description: desc, Tags: []string{"tool"}})
	}
	return out
}
