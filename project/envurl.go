package project

import (
	"fmt"
	"os"
	"strings"

	"github.com/weft-agents/weft"
)

// expandURLs resolves ${env:NAME} (and ${env:NAME:default}) in a model's providerOptions.baseUrl
// and a provider's baseUrl from the environment at load time, so that one definition serves
// every environment (a local server in development, a gateway in production); the providers
// would otherwise send the text as written. A variable that is not set and has no default is an
// error naming the file, the field and the variable.
func (l *loader) expandURLs(rel string, d definition) []weft.Diagnostic {
	lookup := l.opt.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	expand := func(field, s string) (string, *weft.Diagnostic) {
		if !strings.Contains(s, "${env:") {
			return s, nil
		}
		out, err := weft.ExpandEnv(s, func(name string) (string, bool, error) {
			v, ok := lookup(name)
			return v, ok, nil
		})
		if err != nil {
			return s, &weft.Diagnostic{Source: rel, Path: field, Severity: weft.SeverityError,
				Message: fmt.Sprintf("%v: set it (in the environment or the project's .env), or give a default: ${env:NAME:http://…}", err)}
		}
		return out, nil
	}
	var diags []weft.Diagnostic
	if m := d.model; m != nil && d.implicitFor == nil {
		if s, ok := m.ProviderOptions["baseUrl"].(string); ok {
			v, diag := expand("providerOptions.baseUrl", s)
			if diag != nil {
				diags = append(diags, *diag)
			}
			m.ProviderOptions["baseUrl"] = v
		}
	}
	if p := d.provider; p != nil && d.implicitFor == nil {
		v, diag := expand("baseUrl", p.BaseURL)
		if diag != nil {
			diags = append(diags, *diag)
		}
		p.BaseURL = v
	}
	return diags
}
