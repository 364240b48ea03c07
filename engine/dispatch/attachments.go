package dispatch

import (
	"fmt"
	"mime"
	"path"
	"strings"
	"time"

	"github.com/weft-agents/weft"
)

// NewFile is an attachment to write with the message that carries it.
type NewFile struct {
	// Info is the file as stored under /attachments/.
	Info weft.FileInfo
	// Data are its bytes, as the tool gave them (never downsampled).
	Data []byte
	// Att is the message's attachment naming the file.
	Att weft.Attachment
}

// Attachments turns a tool result's attachments into files to store under /attachments/ (new,
// byte-identical: never downsampled) and references to existing files of the thread, which stat
// reads; now names the new files.
func Attachments(in []weft.ToolAttachment, now func() time.Time, stat func(path string) (weft.FileInfo, error)) ([]NewFile, []weft.Attachment, error) {
	var files []NewFile
	var refs []weft.Attachment
	for _, a := range in {
		if a.IsRef() {
			p, err := weft.CleanPath(a.Path)
			if err != nil {
				return nil, nil, fmt.Errorf("attachment %q: invalid path %q", a.Name, a.Path)
			}
			fi, err := stat(p)
			if err != nil || fi.IsDir {
				return nil, nil, fmt.Errorf("attachment %q: no file %s in this thread", a.Name, p)
			}
			refs = append(refs, weft.Attachment{ID: or(a.ID, weft.NewID("att_")), Path: p, Name: or(a.Name, fi.Name),
				MimeType: or(a.MimeType, fi.MimeType), Size: fi.Size, Width: a.Width, Height: a.Height, Description: a.Description})
			continue
		}
		if a.Data == nil {
			return nil, nil, fmt.Errorf("attachment %q has neither data nor a path", a.Name)
		}
		p := AttachmentPath(now(), a.Name, a.MimeType)
		files = append(files, NewFile{
			Info: weft.FileInfo{Path: p, Name: a.Name, MimeType: a.MimeType, Size: int64(len(a.Data)), Width: a.Width, Height: a.Height},
			Data: a.Data,
			Att:  weft.Attachment{ID: weft.NewID("att_"), Path: p, Name: a.Name, MimeType: a.MimeType, Size: int64(len(a.Data)), Width: a.Width, Height: a.Height},
		})
	}
	return files, refs, nil
}

// AttachmentPath names a new attachment /attachments/<unix-ms>-<8 hex>.<ext>: the extension is
// name's, else the first one of mimeType.
func AttachmentPath(now time.Time, name, mimeType string) string {
	ext := strings.ToLower(path.Ext(name))
	if ext == "" || len(ext) > 10 || strings.ContainsAny(ext, "/\\") {
		ext = ""
		if exts, _ := mime.ExtensionsByType(mimeType); len(exts) > 0 {
			ext = exts[0]
		}
	}
	id := weft.NewID("")
	return fmt.Sprintf("/attachments/%d-%s%s", now.UnixMilli(), id[len(id)-8:], ext)
}

// or returns s, or def when s is empty.
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
