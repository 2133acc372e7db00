// Command apilist writes the exported API of every public package of the
// repository, one file a package under api/, as the Go project's own api/
// files do: one line for each exported constant, variable, function, type,
// field, method and interface method, sorted, so that any change to the
// surface shows in review as a change to these files.
//
// Run it from the repository root (go.work lists the modules):
//
//	go run ./internal/tools/apilist          # rewrite api/*.txt
//	go run ./internal/tools/apilist -check   # CI: fail when they are stale
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/types"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// public lists the packages whose API is frozen, and the file each
// listing goes to.
var public = map[string]string{
	"github.com/lendgraph/lendgraph-go":               "lendgraph.txt",
	"github.com/lendgraph/lendgraph-go/lendgraphtest": "lendgraphtest.txt",
	"github.com/lendgraph/lendgraph-go/parquet":       "parquet.txt",
	"github.com/lendgraph/lendgraph-go/export":        "export.txt",
	"github.com/lendgraph/lendgraph-go/searchhost":    "searchhost.txt",
	"github.com/lendgraph/lendgraph-go/otel":          "otel.txt",
}

func main() {
	check := flag.Bool("check", false, "compare the listings with api/*.txt instead of writing them")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("apilist: ")
	var paths []string
	for p := range public {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax}
	pkgs, err := packages.Load(cfg, paths...)
	if err != nil {
		log.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		os.Exit(1)
	}
	stale := false
	for _, p := range pkgs {
		name := filepath.Join("api", public[p.PkgPath])
		got := listing(p.Types)
		if *check {
			want, err := os.ReadFile(name)
			if err != nil || !bytes.Equal(want, got) {
				stale = true
				log.Printf("%s is not the API of %s: run go run ./internal/tools/apilist and review the change", name, p.PkgPath)
			}
			continue
		}
		if err := os.MkdirAll("api", 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(name, got, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	if stale {
		os.Exit(1)
	}
}

// listing is the sorted lines of pkg's exported API.
func listing(pkg *types.Package) []byte {
	qual := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return p.Name()
	}
	var lines []string
	add := func(format string, a ...any) {
		lines = append(lines, "pkg "+pkg.Name()+", "+fmt.Sprintf(format, a...))
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			add("const %s %s = %s", name, types.TypeString(o.Type(), qual), o.Val().ExactString())
		case *types.Var:
			add("var %s %s", name, types.TypeString(o.Type(), qual))
		case *types.Func:
			add("func %s%s", name, strings.TrimPrefix(types.TypeString(o.Type(), qual), "func"))
		case *types.TypeName:
			typeLines(o, qual, add)
		}
	}
	slices.Sort(lines)
	return []byte(strings.Join(lines, "\n") + "\n")
}

// typeLines lists a type: its declaration, its exported fields or
// interface methods, and its exported methods.
func typeLines(o *types.TypeName, qual types.Qualifier, add func(string, ...any)) {
	name := o.Name()
	if o.IsAlias() {
		add("type %s = %s", name, types.TypeString(o.Type(), qual))
		return
	}
	named, ok := o.Type().(*types.Named)
	if !ok {
		return
	}
	if tp := named.TypeParams(); tp.Len() > 0 {
		var ps []string
		for i := range tp.Len() {
			p := tp.At(i)
			ps = append(ps, p.Obj().Name()+" "+types.TypeString(p.Constraint(), qual))
		}
		name += "[" + strings.Join(ps, ", ") + "]"
	}
	switch u := named.Underlying().(type) {
	case *types.Struct:
		add("type %s struct", name)
		for i := range u.NumFields() {
			f := u.Field(i)
			if !f.Exported() {
				continue
			}
			if f.Embedded() {
				add("type %s struct, embedded %s", name, types.TypeString(f.Type(), qual))
				continue
			}
			add("type %s struct, %s %s", name, f.Name(), types.TypeString(f.Type(), qual))
		}
	case *types.Interface:
		add("type %s interface", name)
		for i := range u.NumEmbeddeds() {
			add("type %s interface, embedded %s", name, types.TypeString(u.EmbeddedType(i), qual))
		}
		for i := range u.NumExplicitMethods() {
			m := u.ExplicitMethod(i)
			if m.Exported() {
				add("type %s interface, %s%s", name, m.Name(), strings.TrimPrefix(types.TypeString(m.Type(), qual), "func"))
			} else {
				add("type %s interface, unexported methods", name)
			}
		}
	default:
		add("type %s %s", name, types.TypeString(u, qual))
	}
	for i := range named.NumMethods() {
		m := named.Method(i)
		if !m.Exported() {
			continue
		}
		sig := m.Type().(*types.Signature)
		recv := types.TypeString(sig.Recv().Type(), qual)
		add("method (%s) %s%s", recv, m.Name(), strings.TrimPrefix(types.TypeString(sig, qual), "func"))
	}
}
