package prompty

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"path"
	"strings"

	weft "github.com/weft-agents/weft"
)

// parts splits the content [s, e) into text and media parts: in the seed dialect
// at every `![ALT](TARGET "title")` / `![k="v", …](TARGET)` written in template text, and in both
// dialects at every value of a media input. It returns nil when there is no media part.
func (p *parser) parts(s, e int) ([]weft.ContentPart, error) {
	b := p.buf
	var parts []weft.ContentPart
	media := false
	text := s
	addText := func(to int) {
		if t := trimSpaceBytes(b[text:to]); len(t) > 0 {
			parts = append(parts, weft.ContentPart{Type: weft.PartText, Text: string(t)})
		}
	}
	for i := s; i < e; {
		if !p.lit(i) {
			sp := p.spans[p.owner[i]]
			end := min(sp.end, e)
			if kind, ok := p.opt.MediaInputs[sp.src]; ok {
				part, skip, err := p.mediaPart(i, strings.TrimSpace(string(b[i:end])), sp.src, true)
				if err != nil {
					return nil, err
				}
				addText(i)
				if !skip {
					part.Type = kind
					parts = append(parts, part)
				}
				media = true
				text = end
			}
			i = end
			continue
		}
		if p.seed && b[i] == '!' && i+1 < e && b[i+1] == '[' && p.lit(i+1) {
			part, next, skip, ok, err := p.mediaConstruct(i, e)
			if err != nil {
				return nil, err
			}
			if ok {
				addText(i)
				if !skip {
					parts = append(parts, part)
				}
				media = true
				text, i = next, next
				continue
			}
		}
		i++
	}
	if !media {
		return nil, nil
	}
	addText(e)
	if parts == nil {
		parts = []weft.ContentPart{}
	}
	return parts, nil
}

// mediaConstruct parses a media construct starting at `![` (position i). ok is false when the text
// is not one (it then stays text); skip is set when its target is an empty value.
func (p *parser) mediaConstruct(i, e int) (part weft.ContentPart, next int, skip, ok bool, err error) {
	b := p.buf
	j := i + 2
	var attrs map[string]any
	var alt string
	var unsafe *Error
	// ALT is an attribute list when it starts with `key=`.
	k := j
	for k < e && isKeyChar(b[k]) && p.lit(k) {
		k++
	}
	for k < e && (b[k] == ' ' || b[k] == '\t') && p.lit(k) {
		k++
	}
	if k > j && k < e && b[k] == '=' && p.lit(k) {
		a, n, aok, u := p.attrs(j, e, "media")
		if !aok {
			return part, 0, false, false, nil
		}
		attrs, unsafe, j = a, u, n
	} else {
		for j < e && b[j] != ']' {
			if !p.lit(j) || b[j] == '\n' || b[j] == '[' {
				return part, 0, false, false, nil
			}
			j++
		}
		if j >= e || !p.lit(j) {
			return part, 0, false, false, nil
		}
		alt = string(b[i+2 : j])
		j++
	}
	if j >= e || b[j] != '(' || !p.lit(j) {
		return part, 0, false, false, nil
	}
	j++
	for j < e && b[j] == ' ' && p.lit(j) {
		j++
	}
	ts := j
	p.indexTargets()
	j = min(int(p.nextStop[j]), e)
	te := j
	hasInterp, src := false, ""
	if k := int(p.nextInterp[ts]); k < j {
		hasInterp, src = true, p.spans[p.owner[k]].src
	}
	if j >= e || b[j] == '\n' {
		return part, 0, false, false, nil
	}
	var title string
	if b[j] != ')' {
		for j < e && (b[j] == ' ' || b[j] == '\t') && p.lit(j) {
			j++
		}
		if j < e && b[j] == '"' && p.lit(j) {
			q := j + 1
			for q < e && !(b[q] == '"' && p.lit(q)) {
				if !p.lit(q) || b[q] == '\n' {
					return part, 0, false, false, nil
				}
				q++
			}
			if q >= e {
				return part, 0, false, false, nil
			}
			title = string(b[j+1 : q])
			j = q + 1
			for j < e && (b[j] == ' ' || b[j] == '\t') && p.lit(j) {
				j++
			}
		}
		if j >= e || b[j] != ')' || !p.lit(j) {
			return part, 0, false, false, nil
		}
	}
	next = j + 1
	if unsafe == nil && p.unsafeCum[te] > p.unsafeCum[ts] {
		for q := ts; q < te; q++ {
			if p.unsafeCum[q+1] > p.unsafeCum[q] {
				unsafe = p.errAt(q, fmt.Sprintf("unsafe value for %q in media", p.spans[p.owner[q]].src), nil)
				break
			}
		}
	}
	if unsafe != nil {
		return part, 0, false, false, unsafe
	}
	part, skip, err = p.mediaPart(i, strings.TrimSpace(string(b[ts:te])), src, hasInterp)
	if err != nil || skip {
		return part, next, skip, true, err
	}
	part.Description = title
	kind := ""
	if t, ok := attrs["type"].(string); ok {
		kind = strings.ToLower(t)
	} else if attrs == nil {
		kind = strings.ToLower(strings.TrimSpace(alt))
	}
	switch kind {
	case "image":
		part.Type = weft.PartImage
	case "file", "video":
		part.Type = weft.PartFile
	case "audio":
		part.Type = weft.PartAudio
	default:
		if strings.HasPrefix(part.MimeType, "image/") {
			part.Type = weft.PartImage
		} else {
			part.Type = weft.PartFile
		}
	}
	for k, v := range attrs {
		if k == "type" {
			continue
		}
		if part.Options == nil {
			part.Options = map[string]any{}
		}
		part.Options[k] = v
	}
	return part, next, false, true, nil
}

// indexTargets builds, once per parse, the tables that make scanning media targets linear: the
// next literal `)`/space/tab/newline, the next interp byte, and a running count of interp bytes
// whose value holds a quote or a newline.
func (p *parser) indexTargets() {
	if p.nextStop != nil {
		return
	}
	n := len(p.buf)
	p.nextStop = make([]int32, n+1)
	p.nextInterp = make([]int32, n+1)
	p.unsafeCum = make([]int32, n+1)
	p.nextStop[n], p.nextInterp[n] = int32(n), int32(n)
	for i := n - 1; i >= 0; i-- {
		p.nextStop[i], p.nextInterp[i] = p.nextStop[i+1], p.nextInterp[i+1]
		if p.lit(i) {
			switch p.buf[i] {
			case ')', ' ', '\t', '\n':
				p.nextStop[i] = int32(i)
			}
		} else {
			p.nextInterp[i] = int32(i)
		}
	}
	unsafeSpan := make([]bool, len(p.spans))
	for k, sp := range p.spans {
		t := p.buf[sp.start:sp.end]
		unsafeSpan[k] = sp.interp && (containsByte(t, '"') || containsByte(t, '\n'))
	}
	for i := 0; i < n; i++ {
		p.unsafeCum[i+1] = p.unsafeCum[i]
		if unsafeSpan[p.owner[i]] {
			p.unsafeCum[i+1]++
		}
	}
}

// mediaPart resolves a media target: http(s) URL, data: URI, /path in the thread filesystem, or —
// only when written in the template — a file next to the .prompty, inlined as a data: URI. fromInput
// marks a target that holds an input's value; src names that input in errors.
func (p *parser) mediaPart(pos int, target, src string, fromInput bool) (part weft.ContentPart, skip bool, err error) {
	if target == "" {
		p.warn(pos, "empty media target")
		return part, true, nil
	}
	lower := strings.ToLower(target)
	switch {
	case strings.HasPrefix(lower, "http://"), strings.HasPrefix(lower, "https://"):
		u := target
		if q := strings.IndexAny(u, "?#"); q >= 0 {
			u = u[:q]
		}
		return weft.ContentPart{URL: target, MimeType: weft.MIMEByExt(path.Ext(u))}, false, nil
	case strings.HasPrefix(lower, "data:"):
		d, _ := weft.ParseDataURI(target)
		return weft.ContentPart{URL: target, MimeType: strings.ToLower(d.MediaType)}, false, nil
	case strings.HasPrefix(target, "/"):
		return weft.ContentPart{URL: target, MimeType: weft.MIMEByExt(path.Ext(target))}, false, nil
	}
	if fromInput {
		return part, false, p.errAt(pos, fmt.Sprintf("unsafe value for %q in media: a value must be an http(s) URL, a data: URI or a /path in the thread filesystem", src), nil)
	}
	if hasScheme(target) {
		return part, false, p.errAt(pos, fmt.Sprintf("media target %q: unsupported scheme", target), nil)
	}
	if p.opt.ReadFile == nil {
		return part, false, p.errAt(pos, fmt.Sprintf("media file %q: no file reader", target), nil)
	}
	data, rerr := p.opt.ReadFile(target)
	if rerr != nil {
		return part, false, p.errAt(pos, fmt.Sprintf("media file %q: %v", target, rerr), rerr)
	}
	if len(data) > maxMediaBytes {
		return part, false, p.errAt(pos, fmt.Sprintf("media file %q is larger than 20 MiB", target), nil)
	}
	mt := weft.MIMEByExt(path.Ext(target))
	if mt == "" {
		mt = http.DetectContentType(data)
		if i := strings.IndexByte(mt, ';'); i >= 0 {
			mt = mt[:i]
		}
	}
	return weft.ContentPart{URL: "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(data), MimeType: mt}, false, nil
}

// hasScheme reports whether s starts with `scheme:` (two letters or more, so C:\ paths count too).
func hasScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isLetter(c):
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		case c == ':' && i > 0:
			return true
		default:
			return false
		}
	}
	return false
}
