package lendgraph_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestModules_Nested runs the tests of every other module of go.work: the
// command line tool, export, otel (its tests are the module otel/test),
// parquet, searchhost, the tools and the examples that have a go.mod. They
// are modules of their own so that programs importing the SDK do not
// require their dependencies; `go test ./...` here stops at a module
// boundary, and this test carries it over, so the README's one test command
// still tests everything. It runs them in one go command from this
// directory (go.work builds them against this checkout), with -short (the
// end-to-end tests that take minutes skip) and within this test's own
// deadline, so that they fit in this package's go test timeout on a slow
// machine. CI runs each module's tests itself, in full and with -race, and
// sets LENDGRAPH_SKIP_NESTED.
func TestModules_Nested(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the nested modules' tests are not run")
	}
	if os.Getenv("LENDGRAPH_SKIP_NESTED") != "" {
		t.Skip("LENDGRAPH_SKIP_NESTED is set: the nested modules' tests run on their own")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dirs := nestedModules(t, goTool)
	deadline, ok := t.Deadline()
	args := nestedTestArgs(raceEnabled, time.Until(deadline), ok, dirs)
	cmd := exec.Command(goTool, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, out)
	}
	t.Logf("go %v:\n%s", args, out)
}

// nestedModules lists the directories of the checkout's go.work modules
// but this one, each as ./dir. It reads the file by name, whatever GOWORK
// says (CI's oldest-Go step points GOWORK at a workspace of its own).
func nestedModules(t *testing.T, goTool string) []string {
	t.Helper()
	out, err := exec.Command(goTool, "work", "edit", "-json", "go.work").Output()
	if err != nil {
		t.Fatalf("go work edit -json: %v", err)
	}
	var work struct{ Use []struct{ DiskPath string } }
	if err := json.Unmarshal(out, &work); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, u := range work.Use {
		if d := filepath.ToSlash(filepath.Clean(u.DiskPath)); d != "." {
			dirs = append(dirs, "./"+d)
		}
	}
	if len(dirs) == 0 {
		t.Fatal("go.work uses no module but this one")
	}
	return dirs
}

// nestedTestArgs returns the arguments of the go command that runs the
// tests of the nested modules in dirs from a test with left time to its
// deadline: -short, and a -timeout that ends the nested run (with its own
// report of the tests still running) a margin before this test's deadline
// would end this package's run; -timeout 0 when this run has none (go test
// -timeout 0).
func nestedTestArgs(race bool, left time.Duration, hasDeadline bool, dirs []string) []string {
	args := []string{"test", "-short"}
	if race {
		args = append(args, "-race")
	}
	if hasDeadline {
		// A tenth, at least 10 s, is kept for go test to build, report and
		// exit before this package's own timeout.
		timeout := left - max(left/10, 10*time.Second)
		args = append(args, "-timeout", max(timeout, time.Second).Round(time.Second).String())
	} else {
		args = append(args, "-timeout", "0")
	}
	for _, d := range dirs {
		args = append(args, d+"/...")
	}
	return args
}

// TestModules_NestedArgs checks the nested modules' run: -short, so that
// the end-to-end tests that take minutes skip, a -timeout inside this
// package's, and every module.
func TestModules_NestedArgs(t *testing.T) {
	dirs := []string{"./cmd/lendgraph", "./export"}
	for _, c := range []struct {
		race bool
		left time.Duration
		ok   bool
		want string
	}{
		{false, 10 * time.Minute, true, "test -short -timeout 9m0s ./cmd/lendgraph/... ./export/..."},
		{true, 10 * time.Minute, true, "test -short -race -timeout 9m0s ./cmd/lendgraph/... ./export/..."},
		{false, 60 * time.Second, true, "test -short -timeout 50s ./cmd/lendgraph/... ./export/..."},
		{false, 5 * time.Second, true, "test -short -timeout 1s ./cmd/lendgraph/... ./export/..."},
		{false, 0, false, "test -short -timeout 0 ./cmd/lendgraph/... ./export/..."},
	} {
		if got := strings.Join(nestedTestArgs(c.race, c.left, c.ok, dirs), " "); got != c.want {
			t.Errorf("nestedTestArgs(%v, %v, %v) = %q, want %q", c.race, c.left, c.ok, got, c.want)
		}
	}
	got := nestedModules(t, "go")
	for _, want := range []string{"./cmd/lendgraph", "./export", "./otel", "./otel/test", "./parquet", "./searchhost"} {
		if !slices.Contains(got, want) {
			t.Errorf("go.work's modules %v lack %s", got, want)
		}
	}
}

// footprintSmall and footprintBroad are programs that import package
// lendgraph alone: the first lists agents, queries the search host and
// serves search tokens; the second refers to most of the SDK (every
// resource's calls, deliveries and their decoded rows, enrichment,
// analytics, search, market, CRM, saved filters, locations, integrations).
const footprintSmall = `package main

import (
	"context"
	"fmt"
	"net/http"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

func main() {
	c, err := lendgraph.NewClient()
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for a, err := range c.Agents.All(ctx, &lendgraph.ListRequest{}) {
		fmt.Println(a, err)
	}
	fmt.Println(c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"}))
	http.Handle("GET /search-token", c.Search.TokenHandler())
}
`

const footprintBroad = `package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

func main() {
	c, err := lendgraph.NewClient()
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	calls := []any{
		c.Agents.List, c.Agents.Get, c.Agents.All, c.Agents.Pager, c.Agents.Deliver, c.Agents.DeliveryJob, c.Agents.Summary, c.Agents.Chart, c.Agents.TimeSeries,
		c.Originators.List, c.Originators.Count, c.Originators.TitleCompanies, c.Originators.Deliver,
		c.Companies.List, c.Companies.Branches, c.Companies.LenderCount, c.Companies.Deliver,
		c.Loans.List, c.Loans.Deliver, c.Branches.List, c.Sales.List, c.Market.List, c.Market.MostGained,
		c.Properties.List, c.Properties.Enrich, c.Properties.EnrichBulk, c.Properties.EnrichJob, c.Properties.Enrichments, c.Properties.Related, c.Properties.Chart, c.Properties.Deliver,
		c.Search.Instant, c.Search.TokenSource, c.Search.TokenHandler, c.Search.Host().Search,
		c.Locations.Suggest, c.Locations.Retrieve, c.SavedFilters.List, c.SavedFilters.Create,
		c.CRM.Tasks, c.CRM.OrgMembers, c.CRM.TranscribeCall, c.Integrations.PushCRM, c.Integrations.CRMStatus,
	}
	if len(os.Args) > 1 {
		fmt.Println(calls...)
	}
	job := c.Agents.DeliveryJob("dlv_x")
	for row, err := range job.Rows(ctx) {
		_, _ = row, err
	}
	_, _ = job.DownloadFile(ctx, "agents.csv")
	for row, err := range lendgraph.DecodeRows[lendgraph.Agent](strings.NewReader(""), lendgraph.FormatCSV) {
		_, _ = row, err
	}
}
`

// footprintLimit is the most the small program may weigh (issue 26: a
// program importing only package lendgraph stays at or under 14 MB).
// footprintBroadLimit guards the broad program against regressions: it
// weighed 16.2 MB when the records' JSON helpers stopped being generic
// (from 17.4 MB), most of the rest being the calls and row types it uses.
const (
	footprintLimit      = 14_000_000
	footprintBroadLimit = 17_000_000
)

// TestModules_Footprint builds programs that import only package
// lendgraph (footprintSmall, footprintBroad, through a build overlay:
// nothing is written to the source tree) and checks what a consumer pays:
// none of the modules that only other packages need (the Meilisearch client
// of package searchhost, parquet-go of package parquet, the command line
// tool's modules, that is cmd/lendgraph/go.mod's requirements the SDK does
// not share, and the test-only ones), and at most 14 MB for the small
// program. It logs each binary's size and the modules `go version -m`
// lists. The broad program, which uses nearly every call of the SDK and
// decodes rows of every resource, weighs about 16 MB and is held under 17.
func TestModules_Footprint(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the footprint builds are skipped")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	banned := map[string]string{
		"github.com/meilisearch/meilisearch-go": "the Meilisearch client (package searchhost)",
		"github.com/golang-jwt/jwt/v5":          "the Meilisearch client's (package searchhost)",
		"github.com/parquet-go/parquet-go":      "the parquet reader (package parquet)",
		"go.opentelemetry.io/otel":              "OpenTelemetry (package otel)",
		"go.opentelemetry.io/otel/trace":        "OpenTelemetry (package otel)",
		"go.opentelemetry.io/otel/metric":       "OpenTelemetry (package otel)",
		"gocloud.dev":                           "the object store library (package export's buckets)",
		"github.com/aws/aws-sdk-go-v2":          "the S3 driver's (export tests, the command line tool)",
		"github.com/google/go-cmp":              "a test-only module",
		"go.uber.org/goleak":                    "a test-only module",
		"github.com/stretchr/testify":           "a test-only module",
	}
	sdk, cli := requires(t, goTool, "go.mod"), requires(t, goTool, filepath.Join("cmd", "lendgraph", "go.mod"))
	for _, m := range cli {
		if !slices.Contains(sdk, m) && !strings.HasPrefix(m, "github.com/lendgraph/") {
			banned[m] = "a module of the command line tool"
		}
	}
	t.Run("graph", func(t *testing.T) { footprintGraph(t, goTool) })
	t.Run("otel pin", func(t *testing.T) { footprintOTelPin(t, goTool) })
	for _, p := range []struct {
		name, src string
		limit     int64
	}{
		{"small", footprintSmall, footprintLimit},
		{"broad", footprintBroad, footprintBroadLimit},
	} {
		t.Run(p.name, func(t *testing.T) {
			size, linked := buildConsumer(t, goTool, p.src)
			t.Logf("%s program importing only package lendgraph: %d bytes, %d modules: %v", p.name, size, len(linked), linked)
			if size > p.limit {
				t.Errorf("%d bytes, over the %d-byte goal", size, p.limit)
			}
			for _, m := range linked {
				if why, ok := banned[m]; ok {
					t.Errorf("links %s: %s", m, why)
				}
			}
		})
	}
}

// buildConsumer builds src, a main package, as a program of this module
// (an overlay places it at internal/footprint) and returns the binary's
// size and the modules it links, the main module first.
func buildConsumer(t *testing.T, goTool, src string) (int64, []string) {
	t.Helper()
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "main.go")
	overlay := filepath.Join(dir, "overlay.json")
	ov, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(root, "internal", "footprint", "main.go"): file}})
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(overlay, ov, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "consumer")
	if out, err := exec.Command(goTool, "build", "-overlay", overlay, "-o", bin, "./internal/footprint").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(goTool, "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var linked []string
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) >= 2 && (f[0] == "mod" || f[0] == "dep") {
			linked = append(linked, f[1])
		}
	}
	return st.Size(), linked
}

// requires lists the modules a go.mod requires.
func requires(t *testing.T, goTool, gomod string) []string {
	t.Helper()
	out, err := exec.Command(goTool, "mod", "edit", "-json", gomod).Output()
	if err != nil {
		t.Fatalf("go mod edit -json %s: %v", gomod, err)
	}
	var mf struct{ Require []struct{ Path string } }
	if err := json.Unmarshal(out, &mf); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range mf.Require {
		paths = append(paths, r.Path)
	}
	if len(paths) == 0 {
		t.Fatalf("%s requires nothing", gomod)
	}
	return paths
}

// graphLimit is the most modules `go list -m all` may list in a module
// that imports only package lendgraph, itself and the SDK included.
const graphLimit = 20

// graphBanned are the module families that must not be in such a module's
// graph at all: they belong to the nested modules (export, otel, parquet,
// searchhost) and to their dependencies.
var graphBanned = []string{
	"github.com/aws/", "gocloud.dev", "google.golang.org/grpc", "google.golang.org/api", "google.golang.org/genproto",
	"go.opentelemetry.io/", "github.com/meilisearch/", "github.com/parquet-go/", "github.com/lendgraph/lendgraph-go/",
}

// footprintGraph makes a module that imports only package lendgraph (the
// SDK of this checkout, through a replace directive), runs go mod tidy and
// checks its module graph: at most graphLimit modules, none of
// graphBanned. It logs the list.
func footprintGraph(t *testing.T, goTool string) {
	dir := consumerModule(t, goTool, "", footprintSmall)
	mods := goLines(t, goTool, dir, "list", "-m", "-f", "{{.Path}}", "all")
	t.Logf("a module importing only package lendgraph: %d modules in go list -m all: %v", len(mods), mods)
	if len(mods) > graphLimit {
		t.Errorf("%d modules, over the %d-module goal", len(mods), graphLimit)
	}
	for _, m := range mods {
		for _, b := range graphBanned {
			if strings.HasPrefix(m, b) {
				t.Errorf("the graph holds %s", m)
			}
		}
	}
}

// footprintOTelPin: a module pinned at go.opentelemetry.io/otel v1.30.0
// that adds an import of lendgraph stays at v1.30.0 after go mod tidy (the
// SDK raises none of its versions).
func footprintOTelPin(t *testing.T, goTool string) {
	const pinned = "v1.30.0"
	src := strings.Replace(footprintSmall, "\"net/http\"\n", "\"net/http\"\n\n\t\"go.opentelemetry.io/otel\"\n", 1)
	src = strings.Replace(src, "func main() {\n", "func main() {\n\t_ = otel.Tracer(\"app\")\n", 1)
	dir := consumerModule(t, goTool, "require go.opentelemetry.io/otel "+pinned+"\n", src)
	got := goLines(t, goTool, dir, "list", "-m", "-f", "{{.Version}}", "go.opentelemetry.io/otel")
	if len(got) != 1 || got[0] != pinned {
		t.Fatalf("go.opentelemetry.io/otel after adding the SDK: %v, want %s", got, pinned)
	}
}

// consumerModule writes a module requiring the SDK of this checkout (and
// what require adds) with src as its main package, runs go mod tidy in it
// with GOWORK=off, and returns its directory.
func consumerModule(t *testing.T, goTool, require, src string) string {
	t.Helper()
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module example.com/consumer\n\ngo 1.25.0\n\nrequire github.com/lendgraph/lendgraph-go v0.0.0\n" + require +
		"\nreplace github.com/lendgraph/lendgraph-go => " + root + "\n"
	for name, body := range map[string]string{"go.mod": gomod, "main.go": src} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	goLines(t, goTool, dir, "mod", "tidy")
	return dir
}

// goLines runs the go command in dir with GOWORK=off and returns its
// output's lines.
func goLines(t *testing.T, goTool, dir string, args ...string) []string {
	t.Helper()
	cmd := exec.Command(goTool, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go %v in %s: %v\n%s", args, dir, err, stderr)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}
