package weft

import (
	"mime"
	"net/http"
	"path"
	"strings"
)

// DataURI is a parsed data: URI, data:[<mediatype>][;base64],<data>.
type DataURI struct {
	// MediaType is the media type as written, without its parameters; "" when the URI names none.
	MediaType string
	// Base64 reports whether the header ends in ";base64", that is whether Data is base64 text.
	Base64 bool
	// Data is the payload after the first comma, as written (not decoded).
	Data string
}

// ParseDataURI splits a data: URI into its media type, encoding and payload; false when u does not
// start with "data:" (in any case) or has no comma ending the header.
func ParseDataURI(u string) (DataURI, bool) {
	if len(u) < len("data:") || !strings.EqualFold(u[:len("data:")], "data:") {
		return DataURI{}, false
	}
	head, data, found := strings.Cut(u[len("data:"):], ",")
	if !found {
		return DataURI{}, false
	}
	head, b64 := strings.CutSuffix(head, ";base64")
	mt, _, _ := strings.Cut(head, ";")
	return DataURI{MediaType: mt, Base64: b64, Data: data}, true
}

// extTypes maps file extensions to media types, preferred extension of a type first. The table is
// fixed (the system's MIME tables are not consulted) so that every machine agrees.
var extTypes = []struct{ ext, mediaType string }{
	{".txt", "text/plain"},
	{".md", "text/markdown"},
	{".markdown", "text/markdown"},
	{".csv", "text/csv"},
	{".tsv", "text/tab-separated-values"},
	{".html", "text/html"},
	{".htm", "text/html"},
	{".css", "text/css"},
	{".js", "text/javascript"},
	{".mjs", "text/javascript"},
	{".ts", "text/x-typescript"},
	{".go", "text/x-go"},
	{".py", "text/x-python"},
	{".json", "application/json"},
	{".ndjson", "application/x-ndjson"},
	{".jsonl", "application/x-ndjson"},
	{".yaml", "application/yaml"},
	{".yml", "application/yaml"},
	{".xml", "application/xml"},
	{".toml", "application/toml"},
	{".sh", "application/x-sh"},
	{".pdf", "application/pdf"},
	{".zip", "application/zip"},
	{".png", "image/png"},
	{".jpg", "image/jpeg"},
	{".jpeg", "image/jpeg"},
	{".gif", "image/gif"},
	{".webp", "image/webp"},
	{".bmp", "image/bmp"},
	{".svg", "image/svg+xml"},
	{".mp3", "audio/mpeg"},
	{".wav", "audio/wav"},
	{".ogg", "audio/ogg"},
	{".m4a", "audio/mp4"},
	{".flac", "audio/flac"},
	{".mp4", "video/mp4"},
	{".webm", "video/webm"},
	{".mov", "video/quicktime"},
}

// byExt and byType index extTypes; both are built once and never written afterwards.
var byExt, byType = func() (map[string]string, map[string]string) {
	e, t := map[string]string{}, map[string]string{"audio/x-wav": ".wav"}
	for _, x := range extTypes {
		e[x.ext] = x.mediaType
		if _, ok := t[x.mediaType]; !ok {
			t[x.mediaType] = x.ext
		}
	}
	return e, t
}()

// MIMEByExt is the media type, without parameters, of a file extension such as ".png" (any case);
// "" when the fixed table does not know it.
func MIMEByExt(ext string) string {
	return byExt[strings.ToLower(ext)]
}

// ExtByMIME is a file extension, with its dot, for a media type (parameters and case ignored): the
// fixed table's preferred one, else the first the system's tables list; "" when neither knows it.
func ExtByMIME(mediaType string) string {
	m, _, _ := strings.Cut(mediaType, ";")
	if ext, ok := byType[strings.ToLower(strings.TrimSpace(m))]; ok {
		return ext
	}
	if exts, err := mime.ExtensionsByType(mediaType); err == nil && len(exts) > 0 {
		return exts[0]
	}
	return ""
}

// DetectMIME guesses a file's media type: from its name's extension (text types with
// "; charset=utf-8"), else from its leading bytes; an empty file of unknown extension is
// application/octet-stream.
func DetectMIME(name string, data []byte) string {
	if m := MIMEByExt(path.Ext(name)); m != "" {
		if strings.HasPrefix(m, "text/") {
			m += "; charset=utf-8"
		}
		return m
	}
	if len(data) == 0 {
		return "application/octet-stream"
	}
	return http.DetectContentType(data)
}

// IsTextMIME reports whether a media type (parameters and case ignored) holds text: text/*, JSON,
// YAML, XML, JavaScript, CSV, Markdown, TOML and shell (suffixes +json, +xml and +yaml included).
// Stores index such files for Grep.
func IsTextMIME(mediaType string) bool {
	m, _, _ := strings.Cut(mediaType, ";")
	m = strings.ToLower(strings.TrimSpace(m))
	if strings.HasPrefix(m, "text/") || strings.HasSuffix(m, "+json") || strings.HasSuffix(m, "+xml") || strings.HasSuffix(m, "+yaml") {
		return true
	}
	switch m {
	case "application/json", "application/x-ndjson", "application/yaml", "application/x-yaml",
		"application/xml", "application/javascript", "application/x-javascript", "application/ecmascript",
		"application/csv", "application/markdown", "application/x-markdown", "application/toml", "application/x-sh":
		return true
	}
	return false
}

// IsModelImage reports whether models accept a media type as image input (PNG, JPEG, GIF, WebP);
// other images (SVG, TIFF, …) reach a model as files.
func IsModelImage(mediaType string) bool {
	switch mediaType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}
