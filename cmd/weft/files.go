package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
)

// newFilesCmds builds `weft threads files ID` (a thread's files, attachments included) and
// `weft threads file ID PATH [-o FILE]` (one file's bytes, to standard output or a file).
func newFilesCmds(g *globals, db *string) []*cobra.Command {
	files := &cobra.Command{
		Use: "files ID", Short: "List a thread's files (attachments and tool outputs)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if rc := remoteOf(g); rc != nil {
				return rc.files(cmd, a[0])
			}
			st, err := openExisting(cmd, *db)
			if err != nil {
				return err
			}
			defer st.Close()
			if _, err := st.Thread(cmd.Context(), a[0]); err != nil {
				return exit(threadExit(err), err)
			}
			var all []weft.FileInfo
			if err := walkFiles(cmd.Context(), st, a[0], "/", &all); err != nil {
				return exit(exitFailure, err)
			}
			printFiles(cmd, all)
			return nil
		},
	}
	var outFile string
	file := &cobra.Command{
		Use: "file ID PATH", Short: "Write one of a thread's files to standard output (or -o FILE)", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, a []string) error {
			if rc := remoteOf(g); rc != nil {
				return rc.file(cmd, a[0], a[1], outFile)
			}
			st, err := openExisting(cmd, *db)
			if err != nil {
				return err
			}
			defer st.Close()
			p, err := weft.CleanPath(a[1])
			if err != nil {
				return exit(exitUsage, fmt.Errorf("%s: %w", a[1], err))
			}
			if _, err := st.Files().Stat(cmd.Context(), a[0], p); err != nil {
				return exit(threadExit(err), fmt.Errorf("thread %s: %s: %w", a[0], p, weft.ErrNotFound))
			}
			r, err := st.Files().Open(cmd.Context(), a[0], p)
			if err != nil {
				return exit(exitFailure, err)
			}
			defer r.Close()
			var w io.Writer = cmd.OutOrStdout()
			if outFile != "" {
				f, err := os.OpenFile(outFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
				if err != nil {
					return exit(exitUsage, fmt.Errorf("-o: %w", unwrapPath(err)))
				}
				defer f.Close()
				w = f
			}
			n, err := io.Copy(w, r)
			if err != nil {
				return exit(exitFailure, err)
			}
			if outFile != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s (%s)\n", outFile, weft.ByteSize(n))
			}
			return nil
		},
	}
	file.Flags().StringVarP(&outFile, "output", "o", "", "write to this file instead of standard output")
	return []*cobra.Command{files, file}
}

// printFiles prints a thread's files as a table (or says it has none), for a store and a server alike.
func printFiles(cmd *cobra.Command, files []weft.FileInfo) {
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PATH\tTYPE\tSIZE")
	for _, f := range files {
		fmt.Fprintf(w, "%s\t%s\t%s\n", f.Path, f.MimeType, weft.ByteSize(f.Size))
	}
	w.Flush()
	if len(files) == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "the thread has no files")
	}
}

// walkFiles lists a thread's files under dir, depth first.
func walkFiles(ctx context.Context, st weft.Store, threadID, dir string, out *[]weft.FileInfo) error {
	entries, err := st.Files().ReadDir(ctx, threadID, dir)
	if err != nil {
		if weft.ErrorCode(err) == weft.ENotFound {
			return nil
		}
		return err
	}
	for _, e := range entries {
		if e.IsDir {
			if err := walkFiles(ctx, st, threadID, e.Path, out); err != nil {
				return err
			}
			continue
		}
		*out = append(*out, e)
	}
	return nil
}
