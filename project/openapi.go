package project

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/declared"
	"github.com/weft-agents/weft/prompty"
)

// maxSpecFile caps an OpenAPI document a .prompty file names.
const maxSpecFile = 8 << 20

// openapiEntries binds a Prompty `kind: openapi` tool: each operation of the OpenAPI 3 document
// `specification` (a JSON or YAML file next to the .prompty, inside the project, or the document
// inline) becomes an http tool NAME_operationId that calls it, limited to `operationIds` when
// given. `connection.endpoint` overrides the document's server URL; a key written
// `connection.apiKey: ${env:NAME}` (or `${env:NAME:default}`) is the secret variable NAME, read
// when the tool is called and sent as the document's security scheme says (else as a bearer
// token). The entries are the operations' tools.
func (l *loader) openapiEntries(d *decoder, path string, raw map[string]any, f *prompty.File, pf *parsed) []weft.ToolEntry {
	name, _ := raw["name"].(string)
	if name == "" {
		name, _ = raw["id"].(string)
	}
	if name == "" {
		d.errf(path+".name", "an openapi tool needs a name: its operations become tools named NAME_operationId")
		return nil
	}
	specPath := path + ".specification"
	spec, ok := raw["specification"]
	if !ok {
		// Prompty v1 (C# agents) wrote the document under options.schema.
		if o, isMap := raw["options"].(map[string]any); isMap {
			if spec, ok = o["schema"]; ok {
				specPath = path + ".options.schema"
			}
		}
	}
	var doc []byte
	switch s := spec.(type) {
	case nil:
		d.errf(path+".specification", "an openapi tool needs specification: the OpenAPI 3 document (a JSON or YAML file next to this one)")
		return nil
	case string:
		if strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
			d.errf(specPath, "Weft does not download OpenAPI documents: save %s next to the .prompty file and name the file", s)
			return nil
		}
		real, data, err := l.readBeside(pf.full, s)
		if err != nil {
			d.errf(specPath, "%v", err)
			return nil
		}
		pf.refs = append(pf.refs, real) // the document is this file's data, not a definition
		doc = data
	case map[string]any:
		data, err := json.Marshal(s)
		if err != nil {
			d.errf(specPath, "the OpenAPI document is not JSON: %v", err)
			return nil
		}
		doc = data
	default:
		d.errf(specPath, "specification is the OpenAPI document's file (or the document itself)")
		return nil
	}
	opt := declared.OpenAPIOptions{Prefix: name}
	conn, _ := raw["connection"].(map[string]any)
	for _, k := range []string{"endpoint", "url", "baseUrl"} {
		if s, ok := conn[k].(string); ok && s != "" {
			opt.BaseURL = s
			break
		}
	}
	if ids, ok := raw["operationIds"].([]any); ok {
		opt.Operations = []string{}
		for _, id := range ids {
			if s, ok := id.(string); ok {
				opt.Operations = append(opt.Operations, s)
			}
		}
	}
	var keyVar *weft.VariableDefinition
	for _, k := range []string{"apiKey", "api_key", "key"} {
		if _, has := conn[k]; !has {
			continue
		}
		env, def, hasDef := "", "", false
		for _, p := range []string{path, "tools." + name} {
			if n, ok := f.EnvRefs[p+".connection."+k]; ok {
				env = n
				def, hasDef = f.EnvDefaults[p+".connection."+k]
				break
			}
		}
		if env == "" {
			d.warnf(path+".connection."+k, "a key written in the file is not used; write it as ${env:NAME} and give NAME a value (weft env set NAME, or --env)")
			break
		}
		opt.Key = "${env:" + env + "}"
		if hasDef {
			opt.Key = "${env:" + env + ":" + def + "}"
		}
		keyVar = &weft.VariableDefinition{Name: env, Type: weft.VarSecret, Required: !hasDef,
			Description: fmt.Sprintf("the key of the %s API (%s)", name, pf.rel)}
		break
	}
	tools, err := declared.OpenAPITools(doc, opt)
	if err != nil {
		d.errf(specPath, "%v", err)
		return nil
	}
	if len(tools) == 0 {
		d.warnf(specPath, "the OpenAPI document describes no operation (get, post, put, patch or delete), so the %s tool offers nothing", name)
	}
	entries := make([]weft.ToolEntry, 0, len(tools))
	for _, t := range tools {
		if keyVar != nil {
			t.Variables = []weft.VariableDefinition{*keyVar}
		}
		pf.defs = append(pf.defs, definition{tool: t})
		entries = append(entries, weft.ToolEntry{Name: t.Name, Kind: weft.EntryTool})
	}
	return entries
}

// readBeside reads a file named relative to the .prompty file full, which must stay inside the
// project (symlinks resolved), and returns its resolved path too.
func (l *loader) readBeside(full, rel string) (string, []byte, error) {
	root, err := filepath.Abs(l.dir)
	if err != nil {
		return "", nil, err
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	p := filepath.Join(filepath.Dir(full), filepath.FromSlash(rel))
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", nil, fmt.Errorf("%s not found next to %s", rel, filepath.Base(full))
	}
	if real, err = filepath.Abs(real); err != nil {
		return "", nil, err
	}
	if r, err := filepath.Rel(root, real); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", nil, fmt.Errorf("%s is outside the project", rel)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", nil, err
	}
	if st.Size() > maxSpecFile {
		return "", nil, fmt.Errorf("%s is larger than %s", rel, weft.ByteSize(maxSpecFile))
	}
	data, err := os.ReadFile(real)
	return real, data, err
}
