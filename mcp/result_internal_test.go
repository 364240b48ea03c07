package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-agents/weft"
)

// TestConvertResultStructured: structuredContent becomes the text only when the reply has no
// content; a reply that mirrors it (server-filesystem's read_media_file: an image part and the
// same image, base64, in structuredContent) keeps the image as an attachment and no base64 text.
func TestConvertResultStructured(t *testing.T) {
	big := strings.Repeat("iVBORw0KGgo", 1000)
	cases := []struct {
		name, reply string
		text        string
		atts        int
	}{
		{"structured only", `{"content":[],"structuredContent":{"temp":21}}`, `{"temp":21}`, 0},
		{"text mirrors structured", `{"content":[{"type":"text","text":"{\"temp\":21}"}],"structuredContent":{"temp":21}}`, `{"temp":21}`, 0},
		{"image mirrored", `{"content":[{"type":"image","data":"` + big + `","mimeType":"image/png"}],"structuredContent":{"content":[{"type":"image","data":"` + big + `","mimeType":"image/png"}]}}`, "", 1},
		{"text and structured differ", `{"content":[{"type":"text","text":"21 degrees"}],"structuredContent":{"temp":21}}`, "21 degrees", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var res sdk.CallToolResult
			if err := json.Unmarshal([]byte(c.reply), &res); err != nil {
				t.Fatal(err)
			}
			got := convertResult(&res)
			if got.Status != weft.ToolSuccess || got.Result != c.text || len(got.Attachments) != c.atts {
				t.Fatalf("got %q with %d attachments, want %q with %d", got.Result, len(got.Attachments), c.text, c.atts)
			}
		})
	}
}
