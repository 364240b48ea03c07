package httpapi_test

import (
	"bytes"
	"context"
	"image"
	"image/color/palette"
	"image/gif"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// TestImageAttachmentDownscaled: a user's image over 2048 px on a side is stored downscaled to
// fit (a GIF as PNG); the file in the thread is the fitted one.
func TestImageAttachmentDownscaled(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var b bytes.Buffer
	if err := gif.Encode(&b, image.NewPaletted(image.Rect(0, 0, 4096, 8), palette.Plan9), nil); err != nil {
		t.Fatal(err)
	}
	id := e.createThread(e.alice)
	events, _ := e.sse(ctx, "/api/threads/"+id+"/events", e.alice, "")
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "look",
		"attachments": []map[string]any{{"name": "wide.gif", "mime_type": "image/gif", "data": b.Bytes()}}}, 202, nil)
	until(t, events, "run_stopped", 10*time.Second)
	var msgs struct {
		Items []weft.Message `json:"items"`
	}
	e.json("GET", "/api/threads/"+id+"/messages", e.alice, nil, 200, &msgs)
	a := msgs.Items[0].Attachments
	if len(a) != 1 || a[0].MimeType != "image/png" || a[0].Width != 2048 || a[0].Height != 4 || a[0].Name != "wide.png" {
		t.Fatalf("attachment %+v", a)
	}
	code, data := e.do("GET", "/api/threads/"+id+"/fs"+a[0].Path, e.alice, nil)
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if code != 200 || err != nil || format != "png" || cfg.Width != 2048 || cfg.Height != 4 {
		t.Fatalf("stored file: %d %s %+v %v", code, format, cfg, err)
	}
}
