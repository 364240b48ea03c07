package prompty

import "strings"

// The front matter's `model:` — a Weft model's name, or a Prompty mapping (v2 keys, v1 keys
// accepted) naming the provider, how to reach it and the options sent with each request.

// ModelRef is a front-matter `model:` mapping (v2 form, v1 keys accepted).
type ModelRef struct {
	// ID is `model.id`: the name of a Weft model, or the provider's model id.
	ID string
	// Provider is `model.provider` (v2).
	Provider string
	// APIType is `model.apiType` (v1: `api`).
	APIType string
	// Connection is `model.connection` (v1: `configuration`); nil when absent.
	Connection *Connection
	// Options is `model.options` (v1: `parameters`) as written; File.ModelOptions is the normalised form.
	Options map[string]any
}

// Connection is `model.connection` (v1: `model.configuration`): how to reach the provider.
type Connection struct {
	// Kind is `kind` (v1: `type`), e.g. key, reference, anonymous (v2), or openai, azure_openai,
	// serverless (v1).
	Kind string
	// Endpoint is `endpoint` (v1: `azure_endpoint`, `base_url`) → the model's baseUrl.
	Endpoint string
	// APIKey is `apiKey` (v1: `api_key`, `key`).
	APIKey string
	// APIKeyEnv names the variable APIKey came from when it was written `${env:NAME}`.
	APIKeyEnv string
	// Deployment is v1 `azure_deployment`: the Azure OpenAI deployment, sent as the model.
	Deployment string
	// APIVersion is v1 `api_version` (Azure OpenAI's api-version query parameter).
	APIVersion string
	// Organization is v1 `organization` (the OpenAI-Organization header).
	Organization string
	// Model is v1 `name` (openai) or `model` (serverless): the upstream model id.
	Model string
	// Raw holds every key as written (after `${env:}`/`${file:}` resolution).
	Raw map[string]any
}

// model reads `model:` — a string, or a mapping with id, provider, apiType, connection, options.
func (f *File) model(fm *frontMatter, v any) error {
	switch t := v.(type) {
	case nil:
		return nil
	case string:
		f.Model = t
		return nil
	case map[string]any:
		m := &ModelRef{}
		get := func(keys ...string) (string, error) {
			for _, k := range keys {
				if x, ok := t[k]; ok && x != nil {
					s, ok := x.(string)
					if !ok {
						return "", fm.errAt(keyPath{"model", k}, "must be a string", nil)
					}
					return s, nil
				}
			}
			return "", nil
		}
		var err error
		if m.ID, err = get("id"); err != nil {
			return err
		}
		if m.Provider, err = get("provider"); err != nil {
			return err
		}
		if m.APIType, err = get("apiType", "api"); err != nil {
			return err
		}
		for _, k := range []string{"connection", "configuration"} {
			c, ok := t[k]
			if !ok || c == nil {
				continue
			}
			cm, ok := c.(map[string]any)
			if !ok {
				return fm.errAt(keyPath{"model", k}, "must be a mapping", nil)
			}
			m.Connection = &Connection{Raw: cm,
				Kind:         firstString(cm, "kind", "type"),
				Endpoint:     firstString(cm, "endpoint", "azure_endpoint", "base_url", "baseUrl"),
				APIKey:       firstString(cm, "apiKey", "api_key", "key"),
				Deployment:   firstString(cm, "azure_deployment", "deployment"),
				APIVersion:   firstString(cm, "api_version", "apiVersion"),
				Organization: firstString(cm, "organization"),
				Model:        firstString(cm, "name", "model")}
			for _, kk := range []string{"apiKey", "api_key", "key"} {
				if name, ok := f.EnvRefs[keyPath{"model", k, kk}.String()]; ok {
					m.Connection.APIKeyEnv = name
					break
				}
			}
			break
		}
		m.Provider = v2Provider(m.Provider)
		if m.Provider == "" && m.Connection != nil {
			m.Provider = v1Provider(m.Connection)
		}
		if m.ID == "" && m.Connection != nil {
			if m.ID = m.Connection.Deployment; m.ID == "" {
				m.ID = m.Connection.Model
			}
		}
		for _, k := range []string{"parameters", "options"} {
			o, ok := t[k]
			if !ok || o == nil {
				continue
			}
			om, ok := o.(map[string]any)
			if !ok {
				return fm.errAt(keyPath{"model", k}, "must be a mapping", nil)
			}
			if m.Options == nil {
				m.Options = map[string]any{}
			}
			for ok, ov := range om {
				m.Options[ok] = ov
			}
		}
		f.ModelOptions = normalizeModelOptions(m.Options)
		f.ModelRef = m
		f.Model = m.ID
		return nil
	}
	return fm.errAt(keyPath{"model"}, "must be a model name or a mapping", nil)
}

// v2Provider maps a Prompty v2 `model.provider` to a Weft provider: azure (Azure OpenAI) and
// foundry (Microsoft Foundry's Azure OpenAI endpoint) → azure_openai; other names as written.
func v2Provider(p string) string {
	switch strings.ToLower(strings.TrimSpace(p)) {
	case "azure", "azure_openai", "azureopenai", "foundry", "azure_foundry":
		return "azure_openai"
	}
	return p
}

// v1Provider maps a Prompty v1 `model.configuration.type` to a Weft provider: openai → openai,
// azure_openai (or azure, or none with an azure_deployment) → azure_openai, serverless /
// azure_serverless / azure_ai_inference (Azure AI inference endpoints) → openai-compatible. Other
// kinds (v2 key, reference, …) name no provider.
func v1Provider(c *Connection) string {
	switch strings.ToLower(strings.TrimSpace(c.Kind)) {
	case "openai":
		return "openai"
	case "azure_openai", "azure":
		return "azure_openai"
	case "serverless", "azure_serverless", "azure_ai_inference", "azure_ai":
		return "openai-compatible"
	case "":
		if c.Deployment != "" {
			return "azure_openai"
		}
	}
	return ""
}

func firstString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok {
			return s
		}
	}
	return ""
}

// normalizeModelOptions renames the spellings of max tokens, temperature, top_p, stop and seed to
// maxOutputTokens, temperature, topP, stop and seed (the camelCase spelling wins over another).
func normalizeModelOptions(o map[string]any) map[string]any {
	if o == nil {
		return nil
	}
	alias := map[string]string{
		"max_tokens": "maxOutputTokens", "maxTokens": "maxOutputTokens", "max_output_tokens": "maxOutputTokens",
		"max_completion_tokens": "maxOutputTokens", "top_p": "topP",
	}
	out := make(map[string]any, len(o))
	for k, v := range o {
		if a, ok := alias[k]; ok {
			if _, has := o[a]; has {
				continue
			}
			k = a
		}
		out[k] = v
	}
	return out
}
