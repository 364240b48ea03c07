package threadstate

import (
	"context"
	"fmt"
	"io"
	"mime"
	"path"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/payload"
)

// StoreAttachments writes new attachments (data) under /attachments/ and resolves references.
func (s messages) StoreAttachments(ctx context.Context, in []weft.ToolAttachment) ([]weft.Attachment, error) {
	return s.StoreAttachmentsThen(ctx, in, nil)
}

// StoreAttachmentsThen is StoreAttachments with then(tx, attachments) run in the transaction that
// writes the files (a queued message and its files land together); then runs even without new
// files.
func (s messages) StoreAttachmentsThen(ctx context.Context, in []weft.ToolAttachment, then func(weft.Tx, []weft.Attachment) error) ([]weft.Attachment, error) {
	var out []weft.Attachment
	var files []dispatch.NewFile
	now := s.e.Now()
	for _, a := range in {
		if a.IsRef() {
			p, err := weft.CleanPath(a.Path)
			if err != nil {
				return nil, fmt.Errorf("attachment path %q: %w", a.Path, err)
			}
			fi, err := s.e.Store().Files().Stat(ctx, s.thread.ID, p)
			if err != nil {
				return nil, fmt.Errorf("Attachment not found: %s", a.Path)
			}
			name := a.Name
			if name == "" {
				name = fi.Name
			}
			out = append(out, weft.Attachment{ID: weft.NewID("att_"), Path: p, Name: name, MimeType: fi.MimeType, Size: fi.Size,
				Width: fi.Width, Height: fi.Height, Description: fi.Description})
			continue
		}
		mt := a.MimeType
		if mt == "" {
			mt = mime.TypeByExtension(path.Ext(a.Name))
		}
		if mt == "" {
			mt = "application/octet-stream"
		}
		p := dispatch.AttachmentPath(now, a.Name, mt)
		f := dispatch.NewFile{Info: weft.FileInfo{Path: p, Name: a.Name, MimeType: mt, Size: int64(len(a.Data)), Width: a.Width, Height: a.Height},
			Data: a.Data, Att: weft.Attachment{ID: weft.NewID("att_"), Path: p, Name: a.Name, MimeType: mt, Size: int64(len(a.Data)), Width: a.Width, Height: a.Height}}
		files = append(files, f)
		out = append(out, f.Att)
	}
	if len(files) == 0 && then == nil {
		return out, nil
	}
	err := s.e.Tx(ctx, s.thread.ID, s.fence(), s.writeRedactor(), func(tx weft.Tx) error {
		for _, f := range files {
			if err := tx.WriteFile(&f.Info, f.Data); err != nil {
				return err
			}
		}
		if then != nil {
			return then(tx, out)
		}
		return nil
	})
	return out, err
}

// threadFS is a thread's filesystem for tools: reads from the store, writes in their own
// transaction (fenced inside a run).
type threadFS struct {
	// s is the thread's State.
	s *State
}

func (f *threadFS) write(ctx context.Context, fn func(weft.Tx) error) error {
	return f.s.e.Tx(ctx, f.s.thread.ID, f.s.fence(), keep, fn)
}

func (f *threadFS) changed(ctx context.Context, p, op string) {
	f.s.emit(ctx, "file_changed", payload.Fields{"path": p, "op": op})
}

func (f *threadFS) WriteFile(ctx context.Context, p string, data []byte, o weft.WriteOptions) (weft.FileInfo, error) {
	clean, err := weft.CleanPath(p)
	if err != nil {
		return weft.FileInfo{}, fmt.Errorf("%q: %w", p, err)
	}
	mt := o.MimeType
	if mt == "" {
		mt = mime.TypeByExtension(path.Ext(clean))
	}
	info := weft.FileInfo{Path: clean, Name: path.Base(clean), MimeType: mt, Size: int64(len(data)), Width: o.Width, Height: o.Height,
		Description: o.Description, Metadata: o.Metadata}
	if err := f.write(ctx, func(tx weft.Tx) error { return tx.WriteFile(&info, data) }); err != nil {
		return weft.FileInfo{}, err
	}
	f.changed(ctx, clean, "write")
	return f.s.e.Store().Files().Stat(ctx, f.s.thread.ID, clean)
}

func (f *threadFS) ReadFile(ctx context.Context, p string) ([]byte, error) {
	return f.s.e.Store().Files().ReadFile(ctx, f.s.thread.ID, p)
}

func (f *threadFS) Open(ctx context.Context, p string) (io.ReadCloser, error) {
	return f.s.e.Store().Files().Open(ctx, f.s.thread.ID, p)
}

func (f *threadFS) Stat(ctx context.Context, p string) (weft.FileInfo, error) {
	return f.s.e.Store().Files().Stat(ctx, f.s.thread.ID, p)
}

func (f *threadFS) ReadDir(ctx context.Context, p string) ([]weft.FileInfo, error) {
	return f.s.e.Store().Files().ReadDir(ctx, f.s.thread.ID, p)
}

func (f *threadFS) Mkdir(ctx context.Context, p string) error {
	return f.write(ctx, func(tx weft.Tx) error { return tx.Mkdir(p) })
}

func (f *threadFS) Remove(ctx context.Context, p string) error {
	err := f.write(ctx, func(tx weft.Tx) error { return tx.RemoveFile(p) })
	if err == nil {
		f.changed(ctx, p, "delete")
	}
	return err
}

func (f *threadFS) RemoveDir(ctx context.Context, p string, recursive bool) error {
	return f.write(ctx, func(tx weft.Tx) error { return tx.RemoveDir(p, recursive) })
}

func (f *threadFS) Rename(ctx context.Context, from, to string) error {
	err := f.write(ctx, func(tx weft.Tx) error { return tx.RenameFile(from, to) })
	if err == nil {
		f.changed(ctx, to, "rename")
	}
	return err
}

func (f *threadFS) Grep(ctx context.Context, pattern string, o weft.GrepOptions) ([]weft.GrepMatch, error) {
	return f.s.e.Store().Files().Grep(ctx, f.s.thread.ID, pattern, o)
}

func (f *threadFS) Find(ctx context.Context, glob string) ([]weft.FileInfo, error) {
	return f.s.e.Store().Files().Find(ctx, f.s.thread.ID, glob)
}

func (f *threadFS) Usage(ctx context.Context) (weft.FileStats, error) {
	return f.s.e.Store().Files().Usage(ctx, f.s.thread.ID)
}
