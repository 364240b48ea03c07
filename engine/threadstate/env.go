package threadstate

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/vars"
)

// view returns the env view for this state: the run's (with the executing tool's entry and prompt
// layers), or one loaded for a state outside runs.
func (s env) view(ctx context.Context) (*vars.View, error) {
	thread, user, instance, err := vars.Load(ctx, s.e.Store(), s.thread.ID, s.thread.UserID)
	if err != nil {
		return nil, err
	}
	var v *vars.View
	if s.r != nil {
		c := s.r.Env()
		v = &c
		if s.exec != nil {
			v.Prompt, v.Entry = s.exec.EnvLayers()
		}
	} else {
		a, _ := s.e.Registry().Agent(s.thread.Agent)
		v = &vars.View{}
		if a != nil {
			v.Agent = a.Env
			v.Declared = vars.DeclaredTypes(vars.NewGraph(s.e.Registry(), a, nil).Declared())
		}
	}
	v.Thread, v.User, v.Instance = vars.Layer(thread), vars.Layer(user), vars.Layer(instance)
	return v, nil
}

func (s env) Env(ctx context.Context, name string) (string, error) {
	v, ok, err := s.LookupEnv(ctx, name)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%w: %s", weft.ErrEnvNotFound, name)
	}
	return v, nil
}

func (s env) LookupEnv(ctx context.Context, name string) (string, bool, error) {
	v, err := s.view(ctx)
	if err != nil {
		return "", false, err
	}
	x, ok := v.Lookup(name)
	return x.Value, ok, nil
}

func (s env) EnvType(ctx context.Context, name string) (weft.VarType, error) {
	v, err := s.view(ctx)
	if err != nil {
		return "", err
	}
	x, ok := v.Lookup(name)
	if !ok {
		if t, ok := v.Declared[name]; ok {
			return t, nil
		}
		return "", fmt.Errorf("%w: %s", weft.ErrEnvNotFound, name)
	}
	return x.Type, nil
}

func (s env) SetEnv(ctx context.Context, name, value string, t weft.VarType) error {
	if t != weft.VarText && t != weft.VarSecret {
		return weft.Errorf(weft.EInvalid, "variable type must be text or secret")
	}
	err := s.e.Store().SetEnv(ctx, weft.EnvThread, s.thread.ID, []weft.EnvValue{{Name: name, Value: value, Type: t}})
	if err == nil && s.r != nil {
		s.r.PostEnv(weft.EnvValue{Name: name, Value: value, Type: t})
	}
	return err
}

// Tenvs is the seed 002 view: the executing tool's tenv properties decoded per schema type.
func (s env) Tenvs(ctx context.Context) (map[string]any, error) {
	if s.exec == nil {
		return nil, weft.ErrNotInRun
	}
	t, offered := s.exec.OfferedTool()
	if !offered {
		return nil, weft.ErrNotInRun
	}
	out := map[string]any{}
	if t == nil || t.Tenvs == nil {
		return out, nil
	}
	v, err := s.view(ctx)
	if err != nil {
		return nil, err
	}
	req := map[string]bool{}
	for _, n := range t.Tenvs.Required {
		req[n] = true
	}
	for name, ps := range t.Tenvs.Properties {
		x, ok := v.Lookup(name)
		if !ok {
			if req[name] {
				return nil, fmt.Errorf("Missing required variable %s for tool %s", name, t.Name)
			}
			continue
		}
		out[name] = decodeTenv(x.Value, ps.Type)
	}
	return out, nil
}

// decodeTenv parses a tenv value per its schema type; unparsable values stay strings.
func decodeTenv(v, typ string) any {
	switch typ {
	case "number":
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	case "integer":
		if i, err := strconv.ParseInt(v, 10, 64); err == nil {
			return i
		}
	case "boolean":
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	case "object", "array":
		var x any
		if json.Unmarshal([]byte(v), &x) == nil {
			return x
		}
	}
	return v
}
