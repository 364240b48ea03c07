package modelcall

import "github.com/weft-agents/weft"

// cost prices an attempt: a provider-reported cost wins; without prices and
// without a reported cost it is unknown (nil).
func cost(m *weft.Model, u weft.Usage) (in, cached, out, total *float64) {
	if u.Cost != nil {
		c := *u.Cost
		return nil, nil, nil, &c
	}
	if m.InputPrice == nil && m.OutputPrice == nil {
		return nil, nil, nil, nil
	}
	ip, op := deref(m.InputPrice), deref(m.OutputPrice)
	cp := ip
	if m.CachedPrice != nil {
		cp = *m.CachedPrice
	}
	i := float64(u.InputTokens-u.CachedTokens) * ip / 1e6
	c := float64(u.CachedTokens) * cp / 1e6
	o := float64(u.OutputTokens+u.ReasoningTokens) * op / 1e6
	t := weft.RoundUSD(i + c + o)
	i, c, o = weft.RoundUSD(i), weft.RoundUSD(c), weft.RoundUSD(o)
	return &i, &c, &o, &t
}

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}
