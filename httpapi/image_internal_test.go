package httpapi

import (
	"bytes"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"
)

func encoded(t testing.TB, format string, w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		p := i / 4
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = uint8(p%w), uint8(p/w), 200, 255
	}
	var b bytes.Buffer
	var err error
	switch format {
	case "png":
		err = png.Encode(&b, img)
	case "jpeg":
		err = jpeg.Encode(&b, img, nil)
	case "gif":
		err = gif.Encode(&b, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestFitImage(t *testing.T) {
	tests := []struct {
		name, format, mime string
		w, h               int
		wantMime           string
		wantW, wantH       int
		same               bool
	}{
		{"wide png", "png", "image/png", 2100, 900, "image/png", 2048, 877, false},
		{"tall jpeg", "jpeg", "image/jpeg", 600, 2200, "image/jpeg", 558, 2048, false},
		{"gif becomes png", "gif", "image/gif", 2200, 60, "image/png", 2048, 55, false},
		{"small png kept", "png", "image/png", 2048, 100, "image/png", 2048, 100, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := encoded(t, tc.format, tc.w, tc.h)
			out, mt, w, h, err := fitImage(in, tc.mime)
			if err != nil {
				t.Fatal(err)
			}
			if mt != tc.wantMime || w != tc.wantW || h != tc.wantH || bytes.Equal(in, out) != tc.same {
				t.Fatalf("%s %d×%d (same=%v), want %s %d×%d (same=%v)", mt, w, h, bytes.Equal(in, out), tc.wantMime, tc.wantW, tc.wantH, tc.same)
			}
			cfg, _, err := image.DecodeConfig(bytes.NewReader(out))
			if err != nil || cfg.Width != w || cfg.Height != h {
				t.Fatalf("the result decodes as %+v, %v", cfg, err)
			}
		})
	}
	if out, mt, _, _, err := fitImage([]byte("not an image"), "image/png"); err != nil || string(out) != "not an image" || mt != "image/png" {
		t.Fatalf("undecodable data: %q %s %v", out, mt, err)
	}
	// A small file claiming huge dimensions is refused before decoding.
	bomb := encoded(t, "gif", 4, 4)
	bomb[6], bomb[7], bomb[8], bomb[9] = 0xff, 0xff, 0xff, 0xff // logical screen 65535×65535
	if _, _, _, _, err := fitImage(bomb, "image/gif"); err == nil {
		t.Fatal("a 65535×65535 image was decoded")
	}
	// A GIF whose logical screen is too wide but whose first frame holds no pixels is refused
	// (it once panicked: the header's size was scaled, not the decoded frame's).
	if _, _, _, _, err := fitImage(emptyFrameGIF(t), "image/gif"); err == nil {
		t.Fatal("an empty frame was fitted")
	}
}

// FuzzFitImage: any bytes posted as an image are stored as sent, refused with an error, or
// downscaled to at most maxImageSide on a side; nothing panics.
func FuzzFitImage(f *testing.F) {
	f.Add(encodedSeed("png", 4, 3), "image/png")
	f.Add(encodedSeed("gif", 3, 2), "image/gif")
	f.Add(encodedSeed("jpeg", 2, 2), "image/jpeg")
	f.Add([]byte("GIF89a\xff\xff\x01\x00"), "image/gif")
	f.Add(emptyFrameGIF(f), "image/gif")
	f.Fuzz(func(t *testing.T, data []byte, mimeType string) {
		out, mt, w, h, err := fitImage(data, mimeType)
		if err != nil {
			return
		}
		if w > maxImageSide || h > maxImageSide {
			t.Fatalf("%d×%d after fitting", w, h)
		}
		if !bytes.Equal(out, data) {
			cfg, _, err := image.DecodeConfig(bytes.NewReader(out))
			if err != nil || cfg.Width != w || cfg.Height != h || (mt != "image/png" && mt != "image/jpeg") {
				t.Fatalf("a fitted image %s %d×%d decodes as %+v %v", mt, w, h, cfg, err)
			}
		}
	})
}

func encodedSeed(format string, w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	var b bytes.Buffer
	switch format {
	case "png":
		png.Encode(&b, img)
	case "jpeg":
		jpeg.Encode(&b, img, nil)
	case "gif":
		gif.Encode(&b, img, nil)
	}
	return b.Bytes()
}

// emptyFrameGIF is a GIF whose logical screen is 3000×4 and whose one frame is 0×4 with an LZW
// stream holding only its end code.
func emptyFrameGIF(t testing.TB) []byte {
	g := encoded(t, "gif", 4, 4)
	g[6], g[7] = 0xb8, 0x0b                              // logical screen width 3000
	i := bytes.IndexByte(g[13+3*256:], ',') + 13 + 3*256 // image descriptor after the global colour table
	g[i+5], g[i+6] = 0, 0                                // frame width 0
	return append(g[:i+10:i+10], 2, 1, 5, 0, ';')        // LZW minimum code size 2, one sub-block {EOI}, trailer
}
