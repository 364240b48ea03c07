// Command shape measures the engine against the limits its layout keeps: for a tree of packages
// (engine/ and its subpackages by default), the non-test lines of each package, the type with the
// most methods, the non-test files over 800 lines, the functions over 120 lines, the mutexes and
// sync.Maps declared, and the non-test files that open a store transaction (a call of a method
// named Tx on a value whose name says it is a store).
//
//	go run ./scripts/shape            # ./engine/...
//	go run ./scripts/shape ./httpapi
//
// Lines are counted as the files hold them (comments and blank lines included).
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Limits from the engine's layout; a figure past its limit is marked.
const (
	maxPackageLines = 5000
	maxFileLines    = 800
	maxFuncLines    = 120
	maxMethods      = 40
	maxMutexes      = 6
	maxSyncMaps     = 1
	maxTxFiles      = 2
)

type tally struct {
	pkgLines  map[string]int
	methods   map[string]int // "pkg.Type" → methods
	bigFiles  []string
	bigFuncs  []string
	mutexes   []string
	syncMaps  []string
	txFiles   map[string]bool
	fileCount int
}

func main() {
	root := "./engine"
	if len(os.Args) > 1 {
		root = strings.TrimSuffix(os.Args[1], "/...")
	}
	t := &tally{pkgLines: map[string]int{}, methods: map[string]int{}, txFiles: map[string]bool{}}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		return t.file(path)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "shape:", err)
		os.Exit(1)
	}
	t.report(os.Stdout)
}

func (t *tally) file(path string) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	t.fileCount++
	pkg := filepath.Dir(path)
	lines := fset.Position(f.End()).Line
	if src, err := os.ReadFile(path); err == nil {
		lines = strings.Count(string(src), "\n")
	}
	t.pkgLines[pkg] += lines
	if lines > maxFileLines {
		t.bigFiles = append(t.bigFiles, fmt.Sprintf("%s (%d)", path, lines))
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Recv != nil && len(n.Recv.List) == 1 {
				t.methods[pkg+"."+recvName(n.Recv.List[0].Type)]++
			}
			if l := fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1; l > maxFuncLines {
				t.bigFuncs = append(t.bigFuncs, fmt.Sprintf("%s:%s (%d)", path, n.Name.Name, l))
			}
		case *ast.Field:
			t.syncType(n.Type, fset.Position(n.Pos()).String())
		case *ast.ValueSpec:
			if n.Type != nil {
				t.syncType(n.Type, fset.Position(n.Pos()).String())
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Tx" && namesStore(sel.X) {
				t.txFiles[path] = true
			}
		}
		return true
	})
	return nil
}

// syncType notes a declared sync.Mutex, sync.RWMutex or sync.Map (a value, not a pointer to one).
func (t *tally) syncType(e ast.Expr, at string) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "sync" {
		return
	}
	switch sel.Sel.Name {
	case "Mutex", "RWMutex":
		t.mutexes = append(t.mutexes, at)
	case "Map":
		t.syncMaps = append(t.syncMaps, at)
	}
}

// namesStore reports whether e is a value named like a store: store, e.store, s.e.store, st, ….
func namesStore(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return strings.Contains(strings.ToLower(e.Name), "store")
	case *ast.SelectorExpr:
		return strings.Contains(strings.ToLower(e.Sel.Name), "store")
	case *ast.CallExpr:
		return namesStore(e.Fun)
	}
	return false
}

func recvName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvName(e.X)
	case *ast.IndexExpr:
		return recvName(e.X)
	case *ast.IndexListExpr:
		return recvName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return "?"
}

func (t *tally) report(w *os.File) {
	mark := func(bad bool) string {
		if bad {
			return "  (over)"
		}
		return ""
	}
	fmt.Fprintf(w, "%d non-test files\n", t.fileCount)
	pkgs := sortedKeys(t.pkgLines)
	for _, p := range pkgs {
		fmt.Fprintf(w, "package %s: %d lines%s\n", p, t.pkgLines[p], mark(t.pkgLines[p] > maxPackageLines))
	}
	types := sortedKeys(t.methods)
	sort.SliceStable(types, func(i, j int) bool { return t.methods[types[i]] > t.methods[types[j]] })
	for i, ty := range types {
		if i == 5 {
			break
		}
		fmt.Fprintf(w, "methods: %s %d%s\n", ty, t.methods[ty], mark(t.methods[ty] > maxMethods))
	}
	fmt.Fprintf(w, "files over %d lines: %d%s\n", maxFileLines, len(t.bigFiles), list(t.bigFiles))
	fmt.Fprintf(w, "functions over %d lines: %d%s\n", maxFuncLines, len(t.bigFuncs), list(t.bigFuncs))
	fmt.Fprintf(w, "mutexes: %d%s%s\n", len(t.mutexes), mark(len(t.mutexes) > maxMutexes), list(t.mutexes))
	fmt.Fprintf(w, "sync.Maps: %d%s%s\n", len(t.syncMaps), mark(len(t.syncMaps) > maxSyncMaps), list(t.syncMaps))
	tx := sortedKeys(t.txFiles)
	fmt.Fprintf(w, "files opening Store.Tx: %d%s%s\n", len(tx), mark(len(tx) > maxTxFiles), list(tx))
}

func list(items []string) string {
	if len(items) == 0 {
		return ""
	}
	sort.Strings(items)
	return "\n  " + strings.Join(items, "\n  ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
