package weft_test

import (
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

func TestParseDataURI(t *testing.T) {
	cases := []struct {
		in   string
		want weft.DataURI
		ok   bool
	}{
		{"data:image/png;base64,iVBOR", weft.DataURI{MediaType: "image/png", Base64: true, Data: "iVBOR"}, true},
		{"DATA:image/png;base64,iVBOR", weft.DataURI{MediaType: "image/png", Base64: true, Data: "iVBOR"}, true},
		{"data:text/plain;charset=utf-8;base64,aGk=", weft.DataURI{MediaType: "text/plain", Base64: true, Data: "aGk="}, true},
		{"data:text/plain,hello,world", weft.DataURI{MediaType: "text/plain", Data: "hello,world"}, true},
		{"data:;base64,aGk=", weft.DataURI{Base64: true, Data: "aGk="}, true},
		{"data:,", weft.DataURI{}, true},
		{"data:image/png;base64", weft.DataURI{}, false},
		{"https://example.com/a.png", weft.DataURI{}, false},
		{"dat", weft.DataURI{}, false},
		{"", weft.DataURI{}, false},
	}
	for _, c := range cases {
		got, ok := weft.ParseDataURI(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseDataURI(%q) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func FuzzParseDataURI(f *testing.F) {
	for _, s := range []string{"data:image/png;base64,iVBOR", "data:,", "data:a;b;base64,", "DATA:x,y", "http://x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		d, ok := weft.ParseDataURI(u)
		if !ok {
			if d != (weft.DataURI{}) {
				t.Fatalf("ParseDataURI(%q) failed but returned %+v", u, d)
			}
			return
		}
		if !strings.EqualFold(u[:5], "data:") {
			t.Fatalf("ParseDataURI(%q) accepted a URI without the data: scheme", u)
		}
		if strings.ContainsAny(d.MediaType, ";,") {
			t.Fatalf("ParseDataURI(%q): media type %q holds a separator", u, d.MediaType)
		}
		if !strings.HasSuffix(u, ","+d.Data) || !strings.HasPrefix(u[5:], d.MediaType) {
			t.Fatalf("ParseDataURI(%q) = %+v: not parts of the URI", u, d)
		}
		head := u[5 : len(u)-len(d.Data)-1]
		if strings.Contains(head, ",") {
			t.Fatalf("ParseDataURI(%q): header %q holds a comma", u, head)
		}
		if d.Base64 != strings.HasSuffix(head, ";base64") {
			t.Fatalf("ParseDataURI(%q): Base64 = %v for header %q", u, d.Base64, head)
		}
	})
}

func TestMIMEByExt(t *testing.T) {
	for ext, want := range map[string]string{".png": "image/png", ".JPG": "image/jpeg", ".jpeg": "image/jpeg", ".md": "text/markdown",
		".txt": "text/plain", ".yml": "application/yaml", ".mov": "video/quicktime", ".unknown": "", "": "", "png": ""} {
		if got := weft.MIMEByExt(ext); got != want {
			t.Errorf("MIMEByExt(%q) = %q, want %q", ext, got, want)
		}
	}
}

func TestExtByMIME(t *testing.T) {
	for mt, want := range map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "IMAGE/JPEG": ".jpg", "text/plain; charset=utf-8": ".txt",
		"text/markdown": ".md", "audio/wav": ".wav", "audio/x-wav": ".wav", "audio/mpeg": ".mp3", "application/x-weft-unknown": ""} {
		if got := weft.ExtByMIME(mt); got != want {
			t.Errorf("ExtByMIME(%q) = %q, want %q", mt, got, want)
		}
	}
}

func TestDetectMIME(t *testing.T) {
	cases := []struct {
		name string
		data string
		want string
	}{
		{"notes.md", "# hi", "text/markdown; charset=utf-8"},
		{"A.TXT", "", "text/plain; charset=utf-8"},
		{"data.json", "{}", "application/json"},
		{"pic.png", "not really", "image/png"},
		{"blob", "", "application/octet-stream"},
		{"blob", "plain words", "text/plain; charset=utf-8"},
		{"blob", "\x89PNG\r\n\x1a\n", "image/png"},
	}
	for _, c := range cases {
		if got := weft.DetectMIME(c.name, []byte(c.data)); got != c.want {
			t.Errorf("DetectMIME(%q, %q) = %q, want %q", c.name, c.data, got, c.want)
		}
	}
}

func TestIsTextMIME(t *testing.T) {
	for mt, want := range map[string]bool{"text/plain": true, "Text/HTML; charset=utf-8": true, "application/json": true,
		"application/ld+json": true, "image/svg+xml": true, "application/x-sh": true, "image/png": false, "application/pdf": false, "": false} {
		if got := weft.IsTextMIME(mt); got != want {
			t.Errorf("IsTextMIME(%q) = %v, want %v", mt, got, want)
		}
	}
}

func TestIsModelImage(t *testing.T) {
	for mt, want := range map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true,
		"image/svg+xml": false, "image/tiff": false, "application/pdf": false} {
		if got := weft.IsModelImage(mt); got != want {
			t.Errorf("IsModelImage(%q) = %v, want %v", mt, got, want)
		}
	}
}
