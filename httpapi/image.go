package httpapi

import (
	"bytes"
	"fmt"
	"image"
	"image/draw"
	"image/jpeg"
	"image/png"
	"net/http"

	_ "image/gif" // decode GIF uploads (re-encoded to PNG)
)

const (
	// maxImageSide is the largest side of a user's image attachment; larger ones are downscaled.
	maxImageSide = 2048
	// maxImagePixels bounds the images decoded for downscaling (a small file may claim huge
	// dimensions).
	maxImagePixels = 64 << 20
)

// fitImage downscales an image larger than maxImageSide on a side to fit, keeping its aspect
// ratio: JPEG and PNG keep their format, other formats become PNG. Images that fit, and data
// that is not a decodable image, are returned unchanged. It returns the data, its media type and
// the final dimensions (0 when unknown).
func fitImage(data []byte, mimeType string) ([]byte, string, int, int, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return data, mimeType, 0, 0, nil // not an image we read: stored as sent
	}
	if cfg.Width <= maxImageSide && cfg.Height <= maxImageSide {
		return data, mimeType, cfg.Width, cfg.Height, nil
	}
	if cfg.Width*cfg.Height > maxImagePixels {
		return nil, "", 0, 0, fmt.Errorf("the image is %d×%d pixels; at most %d pixels are accepted", cfg.Width, cfg.Height, maxImagePixels)
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, "", 0, 0, fmt.Errorf("the image cannot be decoded: %w", err)
	}
	// The decoded bounds, not the header's claim, are what is scaled: a GIF's first frame may be
	// smaller than its logical screen, or empty.
	w, h := src.Bounds().Dx(), src.Bounds().Dy()
	if w == 0 || h == 0 {
		return nil, "", 0, 0, fmt.Errorf("the image has no pixels (%d×%d)", w, h)
	}
	if w <= maxImageSide && h <= maxImageSide {
		return data, mimeType, w, h, nil
	}
	if w >= h {
		w, h = maxImageSide, max(1, h*maxImageSide/w)
	} else {
		w, h = max(1, w*maxImageSide/h), maxImageSide
	}
	dst := boxScale(src, w, h)
	var buf bytes.Buffer
	switch format {
	case "jpeg":
		err, mimeType = jpeg.Encode(&buf, dst, &jpeg.Options{Quality: 90}), "image/jpeg"
	default:
		err, mimeType = png.Encode(&buf, dst), "image/png"
	}
	if err != nil {
		return nil, "", 0, 0, err
	}
	return buf.Bytes(), mimeType, w, h, nil
}

// boxScale downscales src to w×h, each target pixel the average of the source pixels it covers.
func boxScale(src image.Image, w, h int) *image.NRGBA {
	b := src.Bounds()
	in, ok := src.(*image.NRGBA)
	if !ok || b.Min != (image.Point{}) {
		in = image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
		draw.Draw(in, in.Bounds(), src, b.Min, draw.Src)
	}
	sw, sh := in.Bounds().Dx(), in.Bounds().Dy()
	out := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		y0, y1 := y*sh/h, max((y+1)*sh/h, y*sh/h+1)
		for x := range w {
			x0, x1 := x*sw/w, max((x+1)*sw/w, x*sw/w+1)
			var r, g, bl, a, n uint64
			for sy := y0; sy < y1; sy++ {
				row := in.Pix[sy*in.Stride:]
				for sx := x0; sx < x1; sx++ {
					p := row[sx*4 : sx*4+4]
					r, g, bl, a = r+uint64(p[0]), g+uint64(p[1]), bl+uint64(p[2]), a+uint64(p[3])
					n++
				}
			}
			o := out.Pix[y*out.Stride+x*4:]
			o[0], o[1], o[2], o[3] = uint8(r/n), uint8(g/n), uint8(bl/n), uint8(a/n)
		}
	}
	return out
}

// isImage tells whether a media type or the data's sniffed type is an image.
func isImage(mimeType string, data []byte) bool {
	if len(mimeType) > 6 && mimeType[:6] == "image/" {
		return true
	}
	ct := http.DetectContentType(data)
	return len(ct) > 6 && ct[:6] == "image/"
}
