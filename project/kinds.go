package project

import (
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

func (d *decoder) model(v any) *weft.Model {
	o := d.object("", v)
	if o == nil {
		return nil
	}
	defer o.done()
	m := &weft.Model{
		Name:            o.str("name"),
		Provider:        o.str("provider"),
		Model:           o.str("model"),
		Fallbacks:       o.strList("fallbacks"),
		InputPrice:      o.number("inputPrice"),
		OutputPrice:     o.number("outputPrice"),
		CachedPrice:     o.number("cachedPrice"),
		ProviderOptions: o.anyMap("providerOptions"),
	}
	if c := o.sub("capabilities"); c != nil {
		m.Capabilities = weft.Capabilities{
			SupportsImages:    c.boolPtr("supportsImages"),
			SupportsToolCalls: c.boolPtr("supportsToolCalls"),
			SupportsStreaming: c.boolPtr("supportsStreaming"),
			SupportsJSONMode:  c.boolPtr("supportsJsonMode"),
			MaxContextTokens:  c.positive("maxContextTokens"),
			MaxOutputTokens:   c.positive("maxOutputTokens"),
			ReasoningLevels:   c.strList("reasoningLevels"),
		}
		for i, l := range m.Capabilities.ReasoningLevels {
			if l != "low" && l != "medium" && l != "high" {
				d.errf(index("capabilities.reasoningLevels", i), "reasoning level must be low, medium or high, got %q", l)
			}
		}
		c.done()
	}
	if t := o.sub("timeouts"); t != nil {
		m.Timeouts = weft.Timeouts{FirstChunk: t.duration("firstChunk"), Stall: t.duration("stall"), Total: t.duration("total")}
		t.done()
	}
	m.MaxReplyBytes = int64(o.positive("maxReplyBytes"))
	if r := o.sub("retry"); r != nil {
		m.Retry = weft.RetryPolicy{Attempts: r.positive("attempts"), BaseDelay: r.duration("baseDelay"),
			MaxDelay: r.duration("maxDelay"), MaxRetryAfter: r.duration("maxRetryAfter")}
		r.done()
	}
	return m
}

func (d *decoder) provider(v any) *weft.ProviderDef {
	o := d.object("", v)
	if o == nil {
		return nil
	}
	defer o.done()
	return &weft.ProviderDef{
		Name:      o.str("name"),
		Base:      o.str("base"),
		BaseURL:   o.str("baseUrl"),
		APIKeyEnv: o.str("apiKeyEnv"),
		Headers:   o.strMap("headers"),
		Options:   o.anyMap("options"),
	}
}

// variables reads a VariableDefinition list.
func (o *obj) variables(key string) []weft.VariableDefinition {
	v, ok := o.get(key)
	if !ok || v == nil {
		return nil
	}
	p := join(o.path, key)
	l, ok := v.([]any)
	if !ok {
		o.d.errf(p, "must be a list of variable declarations, got %s", describe(v))
		return nil
	}
	out := make([]weft.VariableDefinition, 0, len(l))
	for i, e := range l {
		vo := o.d.object(index(p, i), e)
		if vo == nil {
			continue
		}
		def := weft.VariableDefinition{Name: vo.str("name"), Type: weft.VarType(vo.str("type")),
			Required: vo.boolean("required"), Scoped: vo.boolean("scoped"), Description: vo.str("description")}
		if !vo.has("name") {
			o.d.errf(index(p, i)+".name", "variable name is required")
		}
		if def.Type == "" {
			def.Type = weft.VarText
		}
		vo.done()
		out = append(out, def)
	}
	return out
}

// envAlias reads `env` or its legacy alias `tenvs`; both at once is an error.
func (o *obj) envAlias() map[string]string {
	if o.has("env") && o.has("tenvs") {
		o.d.errf(join(o.path, "tenvs"), "give env or its legacy alias tenvs, not both")
	}
	env, tenvs := o.strMap("env"), o.strMap("tenvs")
	if tenvs != nil {
		return tenvs
	}
	return env
}

func (d *decoder) prompt(v any) *weft.Prompt {
	o := d.object("", v)
	if o == nil {
		return nil
	}
	defer o.done()
	return d.promptFields(o)
}

// promptFields reads the prompt keys from o.
func (d *decoder) promptFields(o *obj) *weft.Prompt {
	p := &weft.Prompt{
		Name:            o.str("name"),
		ToolDescription: o.str("toolDescription"),
		Model:           o.str("model"),
		RequiredSchema:  o.schemaAt("requiredSchema"),
		OutputSchema:    o.schemaAt("outputSchema"),
	}
	if raw, ok := o.get("prompt"); ok {
		p.Prompt = d.promptContent("prompt", raw)
	}
	if raw, ok := o.get("tools"); ok && raw != nil {
		p.Tools = d.toolEntries("tools", raw)
	}
	d.promptOptions(o, p)
	return p
}

// promptOptions reads the optional behaviour keys every prompt has, in YAML/JSON files and in
// .prompty front matter alike: includeChat, includePastTools, parallelToolCalls, toolChoice,
// variables, env (alias tenvs), exposeAsTool, reasoning, recentImageThreshold, hooks, modelOptions.
func (d *decoder) promptOptions(o *obj, p *weft.Prompt) {
	p.IncludeChat = o.boolean("includeChat")
	p.IncludePastTools = o.boolean("includePastTools")
	p.ParallelToolCalls = o.boolean("parallelToolCalls")
	p.ToolChoice = weft.ToolChoice(o.str("toolChoice"))
	p.Variables = o.variables("variables")
	p.Env = o.envAlias()
	p.ExposeAsTool = o.boolPtr("exposeAsTool")
	if r := o.sub("reasoning"); r != nil {
		p.Reasoning = &weft.Reasoning{Effort: r.str("effort"), MaxTokens: r.positive("maxTokens"),
			Exclude: r.boolean("exclude"), Include: r.boolean("include")}
		r.done()
	}
	if o.has("recentImageThreshold") {
		if n, ok := o.integer("recentImageThreshold"); ok {
			if n < 1 {
				d.errf(join(o.path, "recentImageThreshold"), "recentImageThreshold must be a positive integer, got %d", n)
			} else {
				p.RecentImageThreshold = n
			}
		}
	}
	if c := o.sub("context"); c != nil {
		p.Context = &weft.ContextPolicy{Strategy: weft.ContextStrategy(c.str("strategy")), ReserveOutput: c.positive("reserveOutput"),
			Summarizer: c.str("summarizer")}
		c.done()
	}
	if o.has("hooks") {
		p.Hooks = o.strList("hooks")
		if p.Hooks == nil {
			p.Hooks = []string{}
		}
	}
	if mo := o.anyMap("modelOptions"); mo != nil {
		p.ModelOptions = mergeMaps(p.ModelOptions, mo)
	}
	for _, k := range sortedAnyKeys(p.ModelOptions) {
		switch k {
		case "temperature", "maxOutputTokens", "topP", "stop", "seed", "topK", "frequencyPenalty", "presencePenalty":
		default:
			d.warnf(join(o.path, "modelOptions."+k), "unknown model option %q is passed to the provider as is", k)
		}
	}
}

// promptContent reads a string or a part list (text, include and env parts).
func (d *decoder) promptContent(path string, v any) weft.PromptContent {
	switch x := v.(type) {
	case string:
		return weft.Text(x)
	case []any:
		parts := make(weft.PromptContent, 0, len(x))
		for i, e := range x {
			po := d.object(index(path, i), e)
			if po == nil {
				continue
			}
			part := weft.PromptPart{Type: weft.PromptPartKind(po.str("type"))}
			switch part.Type {
			case weft.PartKindText:
				if !po.has("content") {
					d.errf(index(path, i)+".content", "a text part needs content")
				}
				part.Content = po.str("content")
			case weft.PartKindInclude:
				if !po.has("prompt") {
					d.errf(index(path, i)+".prompt", "an include part names a prompt")
				}
				part.Prompt = po.str("prompt")
			case weft.PartKindEnv:
				if !po.has("property") {
					d.errf(index(path, i)+".property", "an env part names a variable in property")
				}
				part.Property = po.str("property")
			case "":
				d.errf(index(path, i)+".type", "a part needs type: text, include or env")
			default:
				d.errf(index(path, i)+".type", "part type must be text, include or env, got %q", part.Type)
			}
			po.done()
			parts = append(parts, part)
		}
		return parts
	case nil:
		d.errf(path, "prompt must be a string or a list of parts, got null")
	default:
		d.errf(path, "prompt must be a string or a list of parts, got %s", describe(v))
	}
	return nil
}

var entryPrefixes = map[string]weft.EntryKind{"mcp:": weft.EntryMCP, "tool:": weft.EntryTool, "prompt:": weft.EntryPrompt, "agent:": weft.EntryAgent, "provider:": weft.EntryProvider}

// entryName splits a kind prefix off a tool entry name.
func entryName(s string) (string, weft.EntryKind) {
	for p, k := range entryPrefixes {
		if strings.HasPrefix(s, p) {
			return strings.TrimPrefix(s, p), k
		}
	}
	return s, weft.EntryAny
}

// toolEntries reads a prompt's tools list: names and ToolConfig / SubpromptConfig /
// SubagentToolConfig objects.
func (d *decoder) toolEntries(path string, v any) []weft.ToolEntry {
	l, ok := v.([]any)
	if !ok {
		d.errf(path, "must be a list of tool names or tool entries, got %s", describe(v))
		return nil
	}
	out := make([]weft.ToolEntry, 0, len(l))
	for i, e := range l {
		if s, ok := e.(string); ok {
			name, kind := entryName(s)
			out = append(out, weft.ToolEntry{Name: name, Kind: kind})
			continue
		}
		out = append(out, d.toolEntry(index(path, i), e))
	}
	return out
}

func (d *decoder) toolEntry(path string, v any) weft.ToolEntry {
	o := d.object(path, v)
	if o == nil {
		return weft.ToolEntry{}
	}
	defer o.done()
	name, kind := entryName(o.str("name"))
	if !o.has("name") {
		d.errf(path+".name", "a tool entry needs a name")
	}
	e := weft.ToolEntry{
		Name: name, Kind: kind,
		Optional:                o.str("optional"),
		Env:                     o.strMap("env"),
		Options:                 o.anyMap("options"),
		IncludeTextResponse:     o.boolPtr("includeTextResponse"),
		IncludeToolCalls:        o.boolPtr("includeToolCalls"),
		IncludeErrors:           o.boolPtr("includeErrors"),
		InitUserMessageProperty: o.str("initUserMessageProperty"),
		InitAttachmentsProperty: o.str("initAttachmentsProperty"),
		InitAgentNameProperty:   o.str("initAgentNameProperty"),
		Blocking:                o.boolPtr("blocking"),
		Immediate:               o.boolPtr("immediate"),
		Approval:                weft.Approval(o.str("approval")),
	}
	if raw, ok := o.get("resumable"); ok {
		switch x := raw.(type) {
		case bool:
			if x {
				d.errf(path+".resumable", "resumable is false or a mapping {receives_messages: side_a|side_b, maxInstances, parentCommunication}")
			}
			e.Resumable = &weft.Resumable{}
		case yaml.MapSlice:
			ro := d.object(path+".resumable", x)
			e.Resumable = &weft.Resumable{Enabled: true, ReceivesMessages: ro.str("receives_messages"),
				MaxInstances: ro.positive("maxInstances"), ParentCommunication: ro.str("parentCommunication")}
			if !ro.has("receives_messages") {
				d.errf(path+".resumable.receives_messages", "receives_messages is required (side_a or side_b)")
			}
			ro.done()
		default:
			d.errf(path+".resumable", "resumable is false or a mapping, got %s", describe(raw))
		}
	}
	return e
}

func (d *decoder) agent(v any) *weft.Agent {
	o := d.object("", v)
	if o == nil {
		return nil
	}
	defer o.done()
	a := &weft.Agent{
		Name:            o.str("name"),
		Type:            weft.AgentType(o.str("type")),
		ExposeAsTool:    o.boolean("exposeAsTool"),
		ToolDescription: o.str("toolDescription"),
		Env:             o.envAlias(),
		Hooks:           o.strList("hooks"),
		Description:     o.str("description"),
		Icon:            o.str("icon"),
	}
	if n, ok := o.integer("maxSessionTurns"); ok {
		if n < 1 {
			d.errf("maxSessionTurns", "maxSessionTurns must be a positive integer, got %d", n)
		}
		a.MaxSessionTurns = n
	}
	if b := o.sub("budget"); b != nil {
		a.Budget = &weft.Budget{UnknownCost: b.str("unknownCost")}
		if f := b.number("maxCostUsd"); f != nil {
			a.Budget.MaxCostUSD = *f
		}
		if n, ok := b.integer("maxTokens"); ok {
			a.Budget.MaxTokens = int64(n)
		}
		b.done()
	}
	if s := o.sub("sideA"); s != nil {
		a.SideA = d.side(s)
	}
	if s := o.sub("sideB"); s != nil {
		side := d.side(s)
		a.SideB = &side
	}
	return a
}

func (d *decoder) side(o *obj) weft.AgentSide {
	defer o.done()
	s := weft.AgentSide{
		Prompt:                   o.str("prompt"),
		Handler:                  o.str("handler"),
		Human:                    o.boolean("human"),
		Label:                    o.str("label"),
		StopOnResponse:           o.boolPtr("stopOnResponse"),
		StopTool:                 o.str("stopTool"),
		StopToolResponseProperty: o.str("stopToolResponseProperty"),
		MaxSteps:                 o.positive("maxSteps"),
	}
	s.SessionStop = d.sessionTool(o, "sessionStop")
	s.SessionFail = d.sessionTool(o, "sessionFail")
	s.SessionStatus = d.sessionTool(o, "sessionStatus")
	return s
}

// sessionTool reads a bare tool name or {name, messageProperty?, attachmentsProperty?}.
func (d *decoder) sessionTool(o *obj, key string) *weft.SessionTool {
	v, ok := o.get(key)
	if !ok || v == nil {
		return nil
	}
	p := join(o.path, key)
	if s, ok := v.(string); ok {
		return &weft.SessionTool{Name: s}
	}
	so := d.object(p, v)
	if so == nil {
		return nil
	}
	defer so.done()
	if !so.has("name") {
		d.errf(p+".name", "%s names a tool", key)
	}
	return &weft.SessionTool{Name: so.str("name"), MessageProperty: so.str("messageProperty"), AttachmentsProperty: so.str("attachmentsProperty")}
}

// tool reads a declarative tool file; name is the file stem (seed 004). An mcp file yields a server
// instead of a tool.
func (d *decoder) tool(name string, v any) (*weft.Tool, *weft.MCPServer) {
	o := d.object("", v)
	if o == nil {
		return nil, nil
	}
	defer o.done()
	if n := o.str("name"); o.has("name") && n != name {
		d.errf("name", "a tool's name is its file name (%q); remove name or rename the file", name)
	}
	kind := o.str("kind")
	if kind == "mcp" {
		s := &weft.MCPServer{Name: name, Description: o.str("description"), Tools: o.strList("tools"),
			Prefix: o.str("prefix"), Variables: o.variables("variables"), Timeout: o.duration("timeout"),
			Idempotent: o.boolean("idempotent")}
		if so := o.sub("server"); so != nil {
			s.Command = so.strList("command")
			s.Env = so.strMap("env")
			s.URL = so.str("url")
			s.Headers = so.strMap("headers")
			so.done()
		} else {
			d.errf("server", "an mcp tool file needs server: {command: [...]} or {url: ...}")
		}
		return nil, s
	}
	t := &weft.Tool{
		Name:              name,
		Description:       o.str("description"),
		Args:              o.schemaAt("args"),
		Variables:         o.variables("variables"),
		Tenvs:             o.schemaAt("tenvs"),
		ExecutionMode:     weft.ExecutionMode(o.str("executionMode")),
		ExecutionProvider: o.str("executionProvider"),
		Idempotent:        o.boolean("idempotent"),
		Approval:          weft.Approval(o.str("approval")),
		Uses:              o.strList("uses"),
		Timeout:           o.duration("timeout"),
	}
	switch kind {
	case "command":
		c := &weft.CommandSpec{Dir: o.str("cwd"), Env: o.strMap("env")}
		if raw, ok := o.get("command"); ok {
			c.Argv = d.strList("command", raw)
		} else {
			d.errf("command", "a command tool needs command: [program, args...]")
		}
		t.Command = c
	case "http":
		t.HTTP = &weft.HTTPSpec{URL: o.str("url"), Method: o.str("method"), Headers: o.strMap("headers"), In: o.strMap("in"), Body: o.str("body")}
		if !o.has("url") {
			d.errf("url", "an http tool needs url")
		}
	case "a2a":
		t.A2A = &weft.A2ASpec{Card: o.str("card"), Headers: o.strMap("headers")}
		if !o.has("card") {
			d.errf("card", "an a2a tool needs card: the URL of the remote agent's card")
		}
		if t.Args == nil {
			t.Args = schema.Object(
				schema.Field("message", schema.Describe(schema.String(), "The message to the remote agent.")),
				schema.OptionalField("attachments", schema.Describe(schema.Array(schema.String()), "Paths of thread files to send with it.")))
		}
	case "":
		if t.ExecutionMode != weft.ExecProvider {
			d.errf("kind", "kind is required: command, http, a2a or mcp (or executionMode: provider for a provider-executed tool)")
		}
	default:
		d.errf("kind", "kind must be command, http, a2a or mcp, got %q", kind)
	}
	return t, nil
}

func sortedAnyKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
