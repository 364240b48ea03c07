// Command filerefs measures how a package's files lean on each other: its largest non-test file,
// the type with the most methods, and the references between files. A reference from file F to
// file G is a use, in F, of a function, method or struct field declared in G; a back reference is a
// pair of files that each reference the other (a cycle of two).
//
//	go run ./scripts/filerefs ./engine/
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/filerefs PKG")
		os.Exit(2)
	}
	if err := measure(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "filerefs:", err)
		os.Exit(1)
	}
}

func measure(pkg string) error {
	// Export data of the package's dependencies, built by the go command.
	out, err := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}\t{{.Dir}}\t{{join .GoFiles \" \"}}", pkg).Output()
	if err != nil {
		return fmt.Errorf("go list: %w", err)
	}
	exports := map[string]string{}
	var dir string
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		exports[f[0]] = f[1]
		dir, names = f[2], strings.Fields(f[3]) // the package itself is listed last
	}
	fset := token.NewFileSet()
	var files []*ast.File
	lines := map[string]int{}
	for _, n := range names {
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files = append(files, f)
		lines[n] = fset.File(f.Pos()).LineCount()
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) { return os.Open(exports[path]) })
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	tp, err := (&types.Config{Importer: imp}).Check(pkg, fset, files, info)
	if err != nil {
		return err
	}

	largest := ""
	for n, l := range lines {
		if largest == "" || l > lines[largest] || (l == lines[largest] && n < largest) {
			largest = n
		}
	}
	fmt.Printf("largest file: %s, %d lines (of %d files)\n", largest, lines[largest], len(lines))

	methods := map[string]int{}
	for _, name := range tp.Scope().Names() {
		if tn, ok := tp.Scope().Lookup(name).(*types.TypeName); ok {
			if nt, ok := tn.Type().(*types.Named); ok {
				methods[name] = nt.NumMethods()
			}
		}
	}
	types_ := make([]string, 0, len(methods))
	for n := range methods {
		types_ = append(types_, n)
	}
	sort.Slice(types_, func(i, j int) bool {
		if methods[types_[i]] != methods[types_[j]] {
			return methods[types_[i]] > methods[types_[j]]
		}
		return types_[i] < types_[j]
	})
	fmt.Print("most methods:")
	for _, n := range types_[:min(5, len(types_))] {
		fmt.Printf(" %s %d,", n, methods[n])
	}
	fmt.Println()

	// Edges: file of the use → file of the declaration, for package-level funcs, methods and fields.
	edges := map[[2]string]int{}
	for _, f := range files {
		from := filepath.Base(fset.File(f.Pos()).Name())
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := info.Uses[id]
			if obj == nil || obj.Pkg() != tp || !obj.Pos().IsValid() {
				return true
			}
			switch o := obj.(type) {
			case *types.Func:
			case *types.Var:
				if !o.IsField() {
					return true
				}
			default:
				return true
			}
			to := filepath.Base(fset.Position(obj.Pos()).Filename)
			if to != from {
				edges[[2]string{from, to}]++
			}
			return true
		})
	}
	var back []string
	for e := range edges {
		if e[0] < e[1] && edges[[2]string{e[1], e[0]}] > 0 {
			back = append(back, e[0]+"↔"+e[1])
		}
	}
	sort.Strings(back)
	uses := 0
	for _, n := range edges {
		uses += n
	}
	fmt.Printf("file→file edges: %d (%d uses); back references (file pairs referencing each other): %d\n", len(edges), uses, len(back))
	if os.Getenv("FILEREFS_LIST") != "" {
		fmt.Println(strings.Join(back, "\n"))
	}
	return nil
}
