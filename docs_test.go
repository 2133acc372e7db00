package lendgraph_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// docFiles are the documents whose programs, links and file names are
// checked: the README, the guides under docs/, and the reference files
// beside the README.
func docFiles(t *testing.T) []string {
	t.Helper()
	guides, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md", "BENCHMARKS.md", "RELIABILITY.md", "CONTRIBUTING.md"}, guides...)
}

// fence is one fenced code block of a Markdown file.
type fence struct {
	file     string
	line     int    // of the opening fence, 1-based
	lang     string // the info string's first word
	body     string
	fragment bool // preceded by <!-- fragment -->
}

// fences returns the fenced code blocks of a Markdown file.
func fences(t *testing.T, file string) []fence {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []fence
	for i := 0; i < len(lines); i++ {
		open := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(open, "```") {
			continue
		}
		f := fence{file: file, line: i + 1, lang: strings.Fields(strings.TrimPrefix(open, "```") + " x")[0]}
		if f.lang == "x" {
			f.lang = ""
		}
		for j := i - 1; j >= 0; j-- {
			if prev := strings.TrimSpace(lines[j]); prev != "" {
				f.fragment = prev == "<!-- fragment -->"
				break
			}
		}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		f.body = strings.Join(body, "\n") + "\n"
		out = append(out, f)
	}
	return out
}

// TestDocs_GoProgramsVet: every ```go block of README.md and docs/*.md
// that starts with "package main" is a complete program that builds
// against this checkout (go vet, in a module of its own that go.work
// points at the checkout's modules); one without func main is the tests of
// the program before it (its main_test.go), vetted with it. A go block
// that is neither must be marked <!-- fragment -->.
func TestDocs_GoProgramsVet(t *testing.T) {
	t.Parallel() // a go vet of its own: it overlaps the package's other tests
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	where := map[string]string{} // program file -> document:line
	var files []string
	programs, last, lastDoc := 0, "", ""
	for _, f := range docFiles(t) {
		if f != "README.md" && !strings.HasPrefix(f, "docs"+string(filepath.Separator)) {
			continue
		}
		files = append(files, f)
		for _, b := range fences(t, f) {
			if b.lang != "go" || b.fragment {
				continue
			}
			if !strings.HasPrefix(b.body, "package main") {
				t.Errorf("%s:%d: a go block neither starts with \"package main\" nor is marked <!-- fragment -->", b.file, b.line)
				continue
			}
			file := "main.go"
			if !strings.Contains(b.body, "\nfunc main() {") {
				// The tests of the program above it: its main_test.go.
				if last == "" || lastDoc != b.file {
					t.Errorf("%s:%d: a package main block without func main follows no program in its file", b.file, b.line)
					continue
				}
				file = "main_test.go"
				where[last+"/"+file] = fmt.Sprintf("%s:%d", b.file, b.line)
				if err := os.WriteFile(filepath.Join(dir, last, file), []byte(b.body), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			last, lastDoc = fmt.Sprintf("p%02d", programs), b.file
			programs++
			if err := os.MkdirAll(filepath.Join(dir, last), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, last, file), []byte(b.body), 0o644); err != nil {
				t.Fatal(err)
			}
			where[last+"/"+file] = fmt.Sprintf("%s:%d", b.file, b.line)
		}
	}
	if programs < 5 {
		t.Fatalf("only %d programs found in %v: is the extraction still right?", programs, files)
	}
	// The SDK's own go line: the programs build with the oldest Go it supports.
	goLine := regexp.MustCompile(`(?m)^go \S+$`).Find(mustRead(t, "go.mod"))
	work := string(goLine) + "\n\nuse (\n\t.\n"
	for _, m := range []string{".", "export", "otel", "otel/test", "parquet", "searchhost"} { // otel/test: the OpenTelemetry SDK
		work += "\t" + filepath.Join(root, m) + "\n"
	}
	work += ")\n"
	for name, content := range map[string]string{
		"go.mod":  "module docprograms\n\n" + string(goLine) + "\n",
		"go.work": work,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if sum, err := os.ReadFile("go.work.sum"); err == nil {
		if err := os.WriteFile(filepath.Join(dir, "go.work.sum"), sum, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(goTool, "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(dir, "go.work"), "GOFLAGS=-mod=readonly")
	out, err := cmd.CombinedOutput()
	if err != nil {
		text := string(out)
		for name, at := range where {
			text = strings.ReplaceAll(text, name, at+" (block line)")
		}
		t.Fatalf("go vet of the documents' programs: %v\n%s", err, text)
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	backtick   = regexp.MustCompile("`([^`\\s]+)`")
	inlineCode = regexp.MustCompile("`[^`]*`")
	versionTag = regexp.MustCompile(`(^|/)v[0-9]+\.[0-9]+`)
)

// TestDocs_NamedFilesExist: every relative link, and every backticked
// path that names a .go, .md, .yaml or .sh file or a place under one of
// the repository's directories, in README.md, BENCHMARKS.md,
// RELIABILITY.md, CONTRIBUTING.md and docs/*.md exists in the checkout.
// A path is looked up beside the document, then from the repository's
// root.
func TestDocs_NamedFilesExist(t *testing.T) {
	topDirs := map[string]bool{}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			topDirs[e.Name()] = true
		}
	}
	exists := func(doc, p string) bool {
		for _, base := range []string{filepath.Dir(doc), "."} {
			if _, err := os.Stat(filepath.Join(base, filepath.FromSlash(p))); err == nil {
				return true
			}
		}
		return false
	}
	checked := 0
	for _, doc := range docFiles(t) {
		text := string(mustRead(t, doc))
		inFence := false
		for i, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inFence = !inFence
				continue
			}
			if inFence { // programs and commands: TestDocs_GoProgramsVet and cmd/lendgraph's TestDocsCLIBlocksRun
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, "``"), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				target, anchor, _ := strings.Cut(target, "#")
				checked++
				if !exists(doc, target) {
					t.Errorf("%s:%d: link to %s: no such file", doc, i+1, m[1])
					continue
				}
				in := filepath.Join(filepath.Dir(doc), target)
				if target == "" {
					in = doc // a heading of this document
				}
				if anchor != "" && strings.HasSuffix(in, ".md") && !slices.Contains(anchors(t, in), anchor) {
					t.Errorf("%s:%d: link to %s: %s has no heading whose anchor is #%s", doc, i+1, m[1], in, anchor)
				}
			}
			for _, m := range backtick.FindAllStringSubmatch(line, -1) {
				p := strings.TrimPrefix(m[1], "./")
				if !looksLikePath(p, topDirs) {
					continue
				}
				checked++
				if !exists(doc, p) {
					t.Errorf("%s:%d: `%s` names no file or directory of the repository", doc, i+1, m[1])
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d links and paths checked: is the pattern still right?", checked)
	}
}

// anchors returns the anchors GitHub gives the headings of a Markdown
// file: lower case, punctuation dropped, spaces as hyphens.
func anchors(t *testing.T, file string) []string {
	t.Helper()
	var out []string
	inFence := false
	for _, line := range strings.Split(string(mustRead(t, file)), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range title {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// looksLikePath says whether a backticked word names a file of the
// repository: a plain path (no pattern, variable, URL or version tag such
// as export/v1.2.0) ending in .go, .md, .yaml or .sh, or starting with one
// of the repository's top directories.
func looksLikePath(p string, topDirs map[string]bool) bool {
	if p == "" || strings.ContainsAny(p, "*{}<>$=?:@,()'\"") || strings.HasPrefix(p, "-") || versionTag.MatchString(p) {
		return false
	}
	for _, ext := range []string{".go", ".md", ".yaml", ".sh"} {
		if strings.HasSuffix(p, ext) {
			return true
		}
	}
	first, _, _ := strings.Cut(p, "/")
	return topDirs[first] && (strings.Contains(p, "/") || strings.HasSuffix(p, "/"))
}

// TestDocs_OperationNames: docs/operations.md lists every operation name
// the SDK gives (the generated services' methods that send requests, and
// every name the hand-written calls pass), and no name the code does not
// give.
func TestDocs_OperationNames(t *testing.T) {
	ops := map[string]bool{}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "services_gen.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || !fd.Name.IsExported() {
			continue
		}
		star, ok := fd.Recv.List[0].Type.(*ast.StarExpr)
		if !ok {
			continue
		}
		recv := strings.TrimSuffix(star.X.(*ast.Ident).Name, "Service")
		sends := false
		for _, p := range fd.Type.Params.List {
			if _, variadic := p.Type.(*ast.Ellipsis); variadic {
				sends = true // opts ...Option: the call, or the pager's pages, send requests
			}
		}
		if sends {
			ops[recv+"."+fd.Name.Name] = true
		}
	}
	// Names the hand-written calls pass, as string literals; these two
	// literals name a field and an option in messages, not an operation.
	notOps := map[string]bool{"Pagination.Size": true, "Client.Timeout": true}
	literal := regexp.MustCompile(`"([A-Z][A-Za-z]+\.[A-Z][A-Za-z]+)"`)
	sources, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range sources {
		if strings.HasSuffix(src, "_test.go") {
			continue
		}
		for _, m := range literal.FindAllStringSubmatch(string(mustRead(t, src)), -1) {
			if !notOps[m[1]] {
				ops[m[1]] = true
			}
		}
	}
	doc := string(mustRead(t, filepath.Join("docs", "operations.md")))
	_, list, ok := strings.Cut(doc, "\n## Operation names\n")
	if !ok {
		t.Fatal(`docs/operations.md has no "## Operation names" section`)
	}
	list, _, _ = strings.Cut(list, "\n## ")
	listed := map[string]bool{}
	name := regexp.MustCompile("`([A-Z][A-Za-z]+\\.[A-Z][A-Za-z]+)`")
	for _, m := range name.FindAllStringSubmatch(list, -1) {
		listed[m[1]] = true
	}
	var missing, extra []string
	for op := range ops {
		if !listed[op] {
			missing = append(missing, op)
		}
	}
	for op := range listed {
		if !ops[op] {
			extra = append(extra, op)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	if len(missing) > 0 {
		t.Errorf("docs/operations.md does not list the operations %v", missing)
	}
	if len(extra) > 0 {
		t.Errorf("docs/operations.md lists names the code gives no operation: %v", extra)
	}
}

// TestDocs_NamedTestsExist: every test, benchmark and fuzz target the
// documents name outside their code blocks (TestX, BenchmarkX, FuzzX, or a
// prefix of several, as -run takes it) is a function of a _test.go file
// of the repository, so that a renamed or removed test does not leave a
// rule held by nothing.
func TestDocs_NamedTestsExist(t *testing.T) {
	var defined []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, "_test.go") {
			for _, m := range testFunc.FindAllStringSubmatch(string(mustRead(t, path)), -1) {
				defined = append(defined, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, doc := range docFiles(t) {
		inFence := false
		for i, line := range strings.Split(string(mustRead(t, doc)), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inFence = !inFence
				continue
			}
			if inFence {
				continue
			}
			for _, name := range testName.FindAllString(line, -1) {
				checked++
				if !slices.ContainsFunc(defined, func(d string) bool { return strings.HasPrefix(d, name) }) {
					t.Errorf("%s:%d: %s names no test, benchmark or fuzz target of the repository", doc, i+1, name)
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d test names checked: is the pattern still right?", checked)
	}
}

var (
	testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Z]\w*)\(`)
	testName = regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*`)
)

// TestDocs_READMEShort: the README stays a short tour; the guides hold
// the rest.
func TestDocs_READMEShort(t *testing.T) {
	if n := strings.Count(string(mustRead(t, "README.md")), "\n"); n > 400 {
		t.Errorf("README.md has %d lines; at most 400 (move the detail to a guide under docs/)", n)
	}
}
