package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
	pq "github.com/parquet-go/parquet-go"
	"go.uber.org/goleak"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	"github.com/lendgraph/lendgraph-go/parquet"
)

// The tests build the binary once and run it as a subprocess against the
// fake API started in-process.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lendgraph-cli-test")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "lendgraph")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the binary: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	// The in-process fake and the commands run in this process too: none
	// may leave a goroutine behind.
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

// cli runs the binary against srv with its default caller's key in the
// environment; stdin feeds the process, env adds variables ("K=V").
type cli struct {
	t     testing.TB
	srv   *lendgraphtest.Server
	key   string // the key in the environment ("" for none)
	real  string // the caller's key, which must never show
	stdin string
	env   []string
	dir   string
}

func newCLI(t testing.TB, opts ...lendgraphtest.Option) *cli {
	t.Helper()
	srv := lendgraphtest.NewServer(t, append([]lendgraphtest.Option{lendgraphtest.WithDefaultRows(1500)}, opts...)...)
	key := srv.DefaultCaller().Key
	return &cli{t: t, srv: srv, key: key, real: key, dir: t.TempDir()}
}

func (c *cli) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = c.dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + c.dir,
		lendgraph.EnvBaseURL + "=" + c.srv.URL, lendgraph.EnvAPIKey + "=" + c.key}, c.env...)
	cmd.Stdin = strings.NewReader(c.stdin)
	return cmd
}

func (c *cli) run(args ...string) result {
	c.t.Helper()
	// A bound against a hung command, not a speed check: an export of a
	// hundred shards under -race on a loaded 2-core machine took over 30 s.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := c.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		c.t.Fatalf("lendgraph %s: %v", strings.Join(args, " "), err)
	}
	c.checkNoKey(r)
	return r
}

// checkNoKey fails the test when the API key shows in any output.
func (c *cli) checkNoKey(r result) {
	c.t.Helper()
	if strings.Contains(r.stdout+r.stderr, c.real) {
		c.t.Errorf("the API key appears in the output:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
}

func (c *cli) path(name string) string { return filepath.Join(c.dir, name) }

func wantCode(t testing.TB, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
}

// wantUsageErrors runs each command line and wants exit code 2 for each,
// with no request reaching the fake.
func wantUsageErrors(t *testing.T, c *cli, lines [][]string) {
	t.Helper()
	before := len(c.srv.Requests())
	for _, args := range lines {
		r := c.run(args...)
		if r.code != exitUsage {
			t.Errorf("%s: exit %d, want %d\n%s", strings.Join(args, " "), r.code, exitUsage, r.stderr)
		}
	}
	if n := len(c.srv.Requests()) - before; n != 0 {
		t.Errorf("usage errors sent %d requests", n)
	}
}

// fileRows decodes a delivery file on disk into typed rows.
func fileRows[T any](t *testing.T, path string, f lendgraph.Format) []T {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var seq iter.Seq2[T, error]
	if f == lendgraph.FormatParquet {
		fi, _ := file.Stat()
		seq = parquet.Decode[T](file, fi.Size())
	} else {
		seq = lendgraph.DecodeRows[T](file, f)
	}
	return collect(t, seq)
}

func collect[T any](t *testing.T, seq iter.Seq2[T, error]) []T {
	t.Helper()
	var out []T
	for r, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestDeliverEachFormatMatchesSDK(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	sdk := c.srv.Client()
	for _, f := range []lendgraph.Format{lendgraph.FormatParquet, lendgraph.FormatCSV, lendgraph.FormatJSON, lendgraph.FormatNDJSON} {
		t.Run(string(f), func(t *testing.T) {
			out := c.path("agents." + string(f))
			r := c.run("deliver", "agents", "--format", string(f), "--filter", "state=TX", "--filter", "state=CA",
				"--sort", "transactionCount:desc", "--limit", "120", "-o", out)
			wantCode(t, r, 0)
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing (the data went to the file)", r.stdout)
			}
			for _, want := range []string{"submitted delivery job", "rows (100%)", "download: ", "wrote " + out} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			if _, err := os.Stat(out + ".part"); !os.IsNotExist(err) {
				t.Errorf("%s.part left behind", out)
			}
			job, err := sdk.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{
				FlatFilters: map[string]any{"state": []any{"TX", "CA"}},
				Sort:        []lendgraph.Sort{{Field: "transactionCount", Order: "desc"}},
				Format:      f, Limit: 120,
			})
			if err != nil {
				t.Fatal(err)
			}
			rows := job.Rows(ctx)
			if f == lendgraph.FormatParquet {
				rows = parquet.Rows(ctx, job)
			}
			want := collect(t, rows)
			got := fileRows[lendgraph.Agent](t, out, f)
			if len(want) != 120 {
				t.Fatalf("the SDK delivered %d rows, want 120", len(want))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("rows differ from the SDK's (-sdk +cli):\n%s", diff)
			}
		})
	}
}

func TestDeliverJSONOutputAndFields(t *testing.T) {
	c := newCLI(t)
	out := c.path("a.csv")
	r := c.run("--json", "deliver", "agents", "--format", "csv", "--fields", "id,fullName", "--limit", "10", "-o", out)
	wantCode(t, r, 0)
	var res deliveryResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("stdout is not the JSON result: %v\n%s", err, r.stdout)
	}
	if res.JobID == "" || res.Rows != 10 || res.File != out || res.Format != "csv" || res.Bytes == 0 {
		t.Errorf("result %+v", res)
	}
	// With --json every stderr line is JSON too.
	for line := range strings.Lines(r.stderr) {
		if !json.Valid([]byte(line)) {
			t.Errorf("stderr line is not JSON: %q", line)
		}
	}
	b, _ := os.ReadFile(out)
	if header, _, _ := strings.Cut(string(b), "\n"); header != "id,fullName" {
		t.Errorf("csv header %q, want id,fullName", header)
	}
}

func TestDeliverReattach(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	job, err := c.srv.Client().Loans.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatNDJSON, Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	out := c.path("loans.ndjson.gz")
	r := c.run("deliver", "loans", "--job", job.ID, "-o", out)
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "re-attaching to delivery job "+job.ID) {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	if n := c.srv.CountRequests("POST", "/v1/loans/bulk-delivery"); n != 1 {
		t.Errorf("%d submits, want only the SDK's", n)
	}
	want := collect(t, job.Rows(ctx))
	if diff := cmp.Diff(want, fileRows[lendgraph.Loan](t, out, lendgraph.FormatNDJSON)); diff != "" {
		t.Errorf("rows differ (-sdk +cli):\n%s", diff)
	}
	// --job with query flags is a usage error.
	wantCode(t, c.run("deliver", "loans", "--job", job.ID, "--format", "csv", "-o", out), exitUsage)
}

func TestDeliverAboveThousandWithEntitlement(t *testing.T) {
	c := newCLI(t)
	out := c.path("agents.parquet")
	r := c.run("deliver", "agents", "--format", "parquet", "-o", out)
	wantCode(t, r, exitFailure) // 1,500 rows need the entitlement
	if !strings.Contains(r.stderr, "entitlement") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	if _, err := os.Stat(out + ".part"); !os.IsNotExist(err) {
		t.Errorf("%s.part left behind after a failed submit", out)
	}
	c.srv.SetEntitlement(c.srv.DefaultCaller().OrgID, "agents", lendgraphtest.Entitlement{MaxRows: 100_000})
	wantCode(t, c.run("deliver", "agents", "--format", "parquet", "-o", out), 0)
	if got := fileRows[lendgraph.Agent](t, out, lendgraph.FormatParquet); len(got) != 1500 {
		t.Errorf("%d rows, want 1500", len(got))
	}
}

// rowsText is every row as csv cells: what survives a trip through csv,
// which has no types.
func rowsText(t *testing.T, rows []lendgraph.Row) []map[string]string {
	t.Helper()
	out := make([]map[string]string, len(rows))
	for i, r := range rows {
		out[i] = map[string]string{}
		for k, v := range r.All() {
			out[i][k] = cellText(jsontext.Value(v))
		}
	}
	return out
}

func TestRowsConversionsRoundTrip(t *testing.T) {
	c := newCLI(t)
	src := c.path("agents.ndjson.gz")
	wantCode(t, c.run("deliver", "agents", "--format", "ndjson", "--limit", "300", "-o", src), 0)
	orig := fileRows[lendgraph.Row](t, src, lendgraph.FormatNDJSON)

	conv := func(in, to, out string, extra ...string) {
		t.Helper()
		r := c.run(append([]string{"rows", in, "--to", to}, extra...)...)
		wantCode(t, r, 0)
		if err := os.WriteFile(out, []byte(r.stdout), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// ndjson.gz -> csv -> json: the same cells.
	conv(src, "csv", c.path("a.csv"))
	conv(c.path("a.csv"), "json", c.path("a.json"))
	back := fileRows[lendgraph.Row](t, c.path("a.json"), lendgraph.FormatJSON)
	// A csv row has a cell in every column: a member the row lacks (some
	// agents have no state) comes back as an empty cell.
	want := rowsText(t, orig)
	cols := map[string]bool{}
	for _, r := range orig {
		for _, col := range r.Names() {
			cols[col] = true
		}
	}
	for _, r := range want {
		for col := range cols {
			if _, ok := r[col]; !ok {
				r[col] = ""
			}
		}
	}
	if diff := cmp.Diff(want, rowsText(t, back)); diff != "" {
		t.Errorf("ndjson -> csv -> json changed rows:\n%s", diff)
	}
	// ndjson.gz -> json -> ndjson: the same JSON values, exactly.
	conv(src, "json", c.path("b.json"))
	conv(c.path("b.json"), "ndjson", c.path("b.ndjson"))
	again := fileRows[lendgraph.Row](t, c.path("b.ndjson"), lendgraph.FormatNDJSON)
	if diff := cmp.Diff(orig, again); diff != "" {
		t.Errorf("ndjson -> json -> ndjson changed rows:\n%s", diff)
	}
	// A parquet delivery of the same rows reads the same as typed rows.
	pq := c.path("agents.parquet")
	wantCode(t, c.run("deliver", "agents", "--format", "parquet", "--limit", "300", "-o", pq), 0)
	conv(pq, "ndjson", c.path("p.ndjson"))
	if diff := cmp.Diff(fileRows[lendgraph.Agent](t, src, lendgraph.FormatNDJSON), fileRows[lendgraph.Agent](t, c.path("p.ndjson"), lendgraph.FormatNDJSON)); diff != "" {
		t.Errorf("parquet -> ndjson differs from the ndjson delivery:\n%s", diff)
	}
	// stdin, --fields and an explicit --format.
	c.stdin = mustRead(t, c.path("a.csv"))
	r := c.run("rows", "-", "--format", "csv", "--fields", "id,state")
	wantCode(t, r, 0)
	first, _, _ := strings.Cut(r.stdout, "\n")
	if !strings.HasPrefix(first, `{"id":"agt_`) || !strings.Contains(first, `"state":`) || strings.Count(first, ":") != 2 {
		t.Errorf("first row %s, want only id and state", first)
	}
	if n := strings.Count(r.stdout, "\n"); n != 300 {
		t.Errorf("%d rows from stdin, want 300", n)
	}
}

func TestRowsToParquet(t *testing.T) {
	c := newCLI(t)
	src := c.path("agents.ndjson.gz")
	wantCode(t, c.run("deliver", "agents", "--format", "ndjson", "--limit", "300", "-o", src), 0)
	toParquet := func(out string, args ...string) {
		t.Helper()
		r := c.run(append([]string{"rows"}, append(args, "--to", "parquet")...)...)
		wantCode(t, r, 0)
		if err := os.WriteFile(out, []byte(r.stdout), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// ndjson -> parquet: the same typed rows, every member kept, in row
	// groups of --row-group-size rows.
	toParquet(c.path("a.parquet"), src, "--row-group-size", "128")
	want := fileRows[lendgraph.Agent](t, src, lendgraph.FormatNDJSON)
	if diff := cmp.Diff(want, fileRows[lendgraph.Agent](t, c.path("a.parquet"), lendgraph.FormatParquet)); diff != "" {
		t.Errorf("ndjson -> parquet changed rows:\n%s", diff)
	}
	if groups := parquetGroups(t, c.path("a.parquet")); !slices.Equal(groups, []int64{128, 128, 44}) {
		t.Errorf("row groups %v, want 128, 128, 44", groups)
	}
	// csv -> parquet: columns typed from the cells' text.
	toParquet(c.path("z.parquet"), testFile(t, "zips.csv"))
	types := parquetTypes(t, c.path("z.parquet"))
	if d := cmp.Diff(map[string]string{"id": "STRING", "zip": "STRING", "deals": "INT(64,true)", "score": "DOUBLE",
		"active": "BOOLEAN", "tags": "JSON", "office": "JSON"}, types); d != "" {
		t.Errorf("csv column types: %s", d)
	}
	type zipRow struct {
		Zip    string   `json:"zip"`
		Deals  int      `json:"deals"`
		Score  float64  `json:"score"`
		Tags   []string `json:"tags"`
		Office struct {
			Zip string `json:"zip"`
		} `json:"office"`
	}
	zips := fileRows[zipRow](t, c.path("z.parquet"), lendgraph.FormatParquet)
	if len(zips) != 3 || zips[0].Zip != "02134" || zips[2].Office.Zip != "00501" || zips[0].Deals != 42 || zips[0].Score != 1.5 || len(zips[0].Tags) != 2 {
		t.Errorf("csv -> parquet rows: %+v", zips)
	}
	// parquet -> parquet keeps the input's schema (native nested columns,
	// DECIMAL, DATE), narrowed to --fields.
	toParquet(c.path("n.parquet"), testFile(t, "nested.parquet"), "--fields", "note,office,id")
	if d := cmp.Diff(map[string]string{"id": "INT(32,true)", "note": "STRING", "office": "group"}, parquetTypes(t, c.path("n.parquet"))); d != "" {
		t.Errorf("parquet column types: %s", d)
	}
	// stdin is spooled: the same file.
	c.stdin = mustRead(t, src)
	r := c.run("rows", "-", "--to", "parquet", "--row-group-size", "128")
	wantCode(t, r, 0)
	if r.stdout != mustRead(t, c.path("a.parquet")) {
		t.Error("parquet from stdin differs from parquet from the file")
	}
}

// testFile is the absolute path of a file of testdata/delivery.
func testFile(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("../../testdata/delivery", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// parquetGroups is the rows of each row group of a parquet file.
func parquetGroups(t *testing.T, path string) []int64 {
	t.Helper()
	var out []int64
	for _, rg := range openParquet(t, path).RowGroups() {
		out = append(out, rg.NumRows())
	}
	return out
}

// parquetTypes is the type of each top-level column of a parquet file.
func parquetTypes(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range openParquet(t, path).Schema().Fields() {
		typ := "group"
		if f.Leaf() {
			typ = f.Type().String()
		}
		out[f.Name()] = typ
	}
	return out
}

func openParquet(t *testing.T, path string) *pq.File {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := pq.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDetectFormat(t *testing.T) {
	for _, tc := range []struct {
		name, head, want string
	}{
		{"x.ndjson.gz", "\x1f\x8b\x08", "ndjson"},
		{"x", "PAR1....", "parquet"},
		{"x.dat", " \n[{", "json"},
		{"x.dat", `{"id":1}`, "ndjson"},
		{"x.csv", "id,name\n", "csv"},
		{"empty.json", "", "json"},
		{"empty.parquet", "", "parquet"},
		{"noname", "id\n1\n", "csv"},
	} {
		if got := detectFormat(tc.name, []byte(tc.head)); got != tc.want {
			t.Errorf("detectFormat(%q, %q) = %s, want %s", tc.name, tc.head, got, tc.want)
		}
	}
}

// propertyIDs writes n property ids of the fake's dataset to a file.
func propertyIDs(t *testing.T, c *cli, n int) (string, []string) {
	t.Helper()
	page, err := c.srv.Client().Properties.List(context.Background(), &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: n}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range page.Data {
		ids = append(ids, p.ID)
	}
	path := c.path("ids.txt")
	if err := os.WriteFile(path, []byte("# ids\n"+strings.Join(ids, "\n")+"\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, ids
}

func TestEnrichConfirmation(t *testing.T) {
	c := newCLI(t)
	ids, want := propertyIDs(t, c, 20)
	out := c.path("owners.ndjson")
	submits := func() int { return c.srv.CountRequests("POST", "/v1/properties/enrich-bulk") }

	// Off a terminal without --yes: a usage error that names --yes.
	r := c.run("enrich", "--ids", ids, "-o", out)
	wantCode(t, r, exitUsage)
	if !strings.Contains(r.stderr, "--yes") {
		t.Errorf("stderr does not mention --yes:\n%s", r.stderr)
	}
	// On a terminal, declined: nothing submitted.
	c.env = []string{envAssumeTTY + "=1"}
	c.stdin = "n\n"
	r = c.run("enrich", "--ids", ids, "-o", out)
	wantCode(t, r, exitFailure)
	if !strings.Contains(r.stderr, "worst case 20 credits") || !strings.Contains(r.stderr, "Submit? [y/N]") || !strings.Contains(r.stderr, "nothing was submitted") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	if n := submits(); n != 0 {
		t.Fatalf("%d submits after declining", n)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("declining wrote the output")
	}
	// Accepted.
	c.stdin = "y\n"
	r = c.run("enrich", "--ids", ids, "-o", out)
	wantCode(t, r, 0)
	if n := submits(); n != 1 {
		t.Fatalf("%d submits, want 1", n)
	}
	var got []string
	for line := range strings.Lines(mustRead(t, out)) {
		var e lendgraph.EnrichmentResultEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("result line %q: %v", line, err)
		}
		got = append(got, e.PropertyID)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result property ids (-want +got):\n%s", diff)
	}
	// --yes off a terminal, ids from stdin, --json result.
	c.env, c.stdin = nil, strings.Join(want, "\n")
	r = c.run("--json", "enrich", "--ids", "-", "--yes", "-o", out)
	wantCode(t, r, 0)
	var res enrichResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Properties != 20 || len(res.Jobs) != 1 {
		t.Errorf("result %+v (%v)\n%s", res, err, r.stdout)
	}
	if res.FromCache != 20-res.Failed {
		t.Errorf("a second run should be served from the cache: %+v", res)
	}
}

func TestEnrichInsufficientCredits(t *testing.T) {
	c := newCLI(t)
	ids, _ := propertyIDs(t, c, 20)
	c.srv.SetCredits(c.srv.DefaultCaller().OrgID, 5)
	r := c.run("enrich", "--ids", ids, "--yes", "-o", c.path("o.ndjson"))
	wantCode(t, r, exitCredits)
	for _, want := range []string{"balance 5", "needs 20", "Top up"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if _, err := os.Stat(c.path("o.ndjson.part")); !os.IsNotExist(err) {
		t.Error("the .part file was left behind")
	}
	r = c.run("--json", "enrich", "--ids", ids, "--yes", "-o", c.path("o.ndjson"))
	wantCode(t, r, exitCredits)
	var e struct {
		Error    string
		ExitCode int
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &e); err != nil || e.ExitCode != 3 || !strings.Contains(e.Error, "Top up") {
		t.Errorf("--json error %q (%v)", r.stderr, err)
	}
}

func TestExitCodes(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"bogus"}, exitUsage},
		{[]string{"deliver"}, exitUsage},
		{[]string{"deliver", "agents", "--nope"}, exitUsage},
		{[]string{"deliver", "agents", "--limit", "x"}, exitUsage},
		{[]string{"deliver", "sales", "--format", "csv", "-o", "x"}, exitUsage},
		{[]string{"deliver", "agents", "--format", "xml", "-o", "x"}, exitUsage},
		{[]string{"deliver", "agents", "--format", "csv"}, exitUsage},
		{[]string{"list", "agents", "--size", "1000"}, exitUsage},
		{[]string{"list", "agents", "--where", "{bad"}, exitUsage},
		{[]string{"search", "smi", "--entity", "planets"}, exitUsage},
		{[]string{"search", " "}, exitUsage},
		{[]string{"market", "most-gained", "--state", "Texas"}, exitUsage},
		{[]string{"rows", "nope.csv", "--to", "xml"}, exitUsage},
		{[]string{"get", "agents", "agt_9999999"}, exitFailure},
		{[]string{"rows", "missing.csv"}, exitFailure},
		{[]string{"list", "agents", "--size", "2"}, exitOK},
	} {
		r := c.run(tc.args...)
		if r.code != tc.code {
			t.Errorf("lendgraph %s: exit %d, want %d\n%s", strings.Join(tc.args, " "), r.code, tc.code, r.stderr)
		}
	}
	// No key at all is a usage error that says where the key comes from.
	c.key = ""
	r := c.run("get", "agents", "agt_0000001")
	wantCode(t, r, exitUsage)
	if !strings.Contains(r.stderr, lendgraph.EnvAPIKey) {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

func TestSearchAndMarket(t *testing.T) {
	c := newCLI(t)
	r := c.run("--json", "search", "smi", "--entity", "agents", "--limit", "2")
	wantCode(t, r, 0)
	var res lendgraph.InstantSearchResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Agents) == 0 || len(res.Agents) > 2 || len(res.Originators) != 0 {
		t.Errorf("search result %+v", res)
	}
	r = c.run("search", "smi", "--limit", "1")
	wantCode(t, r, 0)
	if !strings.HasPrefix(r.stdout, "ENTITY") || !strings.Contains(r.stdout, res.Agents[0].ID) {
		t.Errorf("search table:\n%s", r.stdout)
	}

	r = c.run("--json", "market", "most-gained", "--state", "TX", "--limit", "3", "--rank-by", "net")
	wantCode(t, r, 0)
	var mg lendgraph.MostGainedResult
	if err := json.Unmarshal([]byte(r.stdout), &mg); err != nil {
		t.Fatal(err)
	}
	if len(mg.Data) == 0 || len(mg.Data) > 3 {
		t.Errorf("most-gained %+v", mg)
	}
	r = c.run("market", "most-gained", "--state", "TX", "--limit", "3")
	wantCode(t, r, 0)
	if !strings.HasPrefix(r.stdout, "#") || !strings.Contains(r.stderr, "window ") {
		t.Errorf("most-gained table:\n%s\n%s", r.stdout, r.stderr)
	}
}

// startDeliver starts a deliver of a slow job and returns once the job is
// submitted (its id read from stderr). A signal sent before the wait starts
// cancels the wait as one sent during it.
func startDeliver(t *testing.T, c *cli, args ...string) (cmd *exec.Cmd, jobID string, stderr *syncBuffer, done chan result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cmd = c.command(ctx, append([]string{"deliver", "agents", "--format", "csv", "--limit", "1000", "-o", c.path("slow.csv")}, args...)...)
	var stdout bytes.Buffer
	stderr = &syncBuffer{}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = &stdout, io.MultiWriter(stderr, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done = make(chan result, 1)
	go func() {
		_ = cmd.Wait()
		pw.Close()
		done <- result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if _, after, ok := strings.Cut(sc.Text(), "submitted delivery job "); ok {
			jobID, _, _ = strings.Cut(after, ":")
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if jobID == "" {
		t.Fatalf("no job submitted; stderr:\n%s", stderr.String())
	}
	return cmd, jobID, stderr, done
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestDeliverInterrupted(t *testing.T) {
	c := newCLI(t, lendgraphtest.WithJobRate("delivery", 100)) // 1,000 rows: 10 s
	sdk := c.srv.Client()
	ctx := context.Background()
	status := func(id string) lendgraph.JobState {
		st, err := sdk.Agents.DeliveryJob(id).Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Status
	}
	interrupt := func(t *testing.T, args ...string) (string, result) {
		t.Helper()
		cmd, id, _, done := startDeliver(t, c, args...)
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		r := <-done
		c.checkNoKey(r)
		wantCode(t, r, exitInterrupted)
		if _, err := os.Stat(c.path("slow.csv.part")); !os.IsNotExist(err) {
			t.Error("slow.csv.part left behind")
		}
		return id, r
	}

	t.Run("off a terminal the job keeps running", func(t *testing.T) {
		id, r := interrupt(t)
		if !strings.Contains(r.stderr, "keeps running") || !strings.Contains(r.stderr, "--job "+id) {
			t.Errorf("stderr:\n%s", r.stderr)
		}
		if s := status(id); s.Terminal() {
			t.Errorf("job %s is %s, want still running", id, s)
		}
		_, _ = sdk.Agents.DeliveryJob(id).Cancel(ctx)
	})
	t.Run("cancel-on-interrupt", func(t *testing.T) {
		id, r := interrupt(t, "--cancel-on-interrupt")
		if s := status(id); s != lendgraph.JobCancelled {
			t.Errorf("job %s is %s, want cancelled\n%s", id, s, r.stderr)
		}
	})
	t.Run("terminal: answer yes", func(t *testing.T) {
		c.env, c.stdin = []string{envAssumeTTY + "=1"}, "y\n"
		defer func() { c.env, c.stdin = nil, "" }()
		id, r := interrupt(t)
		if !strings.Contains(r.stderr, "Cancel delivery job "+id+" on the server? [y/N]") {
			t.Errorf("no prompt:\n%s", r.stderr)
		}
		if s := status(id); s != lendgraph.JobCancelled {
			t.Errorf("job %s is %s, want cancelled", id, s)
		}
	})
}

func TestListGetAndKeyFile(t *testing.T) {
	c := newCLI(t)
	keyFile := c.path("key")
	if err := os.WriteFile(keyFile, []byte(c.key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.key = "" // only the file has it
	r := c.run("--api-key-file", keyFile, "list", "agents", "--filter", "state=TX", "--size", "3")
	wantCode(t, r, 0)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), r.stdout)
	}
	var a lendgraph.Agent
	if err := json.Unmarshal([]byte(lines[0]), &a); err != nil || a.State != "TX" {
		t.Fatalf("%v %+v", err, a)
	}
	r = c.run("--api-key-file", keyFile, "get", "agents", a.ID)
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, `"id":"`+a.ID+`"`) {
		t.Errorf("get: %s", r.stdout)
	}
}

func TestFakeCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// --config holds settings; a flag overrides the file's rows.
	cfg := filepath.Join(t.TempDir(), "fake.json")
	if err := os.WriteFile(cfg, []byte(`{"rows": 7, "resourceRows": {"loans": 9}, "credits": 12,
		"entitlements": {"agents": {"maxRows": 20}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, binary, "--json", "fake", "--addr", "127.0.0.1:0", "--config", cfg, "--rows", "50")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var info struct {
		BaseURL    string `json:"baseUrl"`
		ControlURL string `json:"controlUrl"`
		SearchHost string `json:"searchHost"`
		Keys       []struct{ Key string }
	}
	if err := json.NewDecoder(stdout).Decode(&info); err != nil {
		t.Fatal(err)
	}
	if info.ControlURL != info.BaseURL+"/_fake" || info.SearchHost == "" {
		t.Errorf("info %+v", info)
	}
	c, err := lendgraph.NewClient(lendgraph.WithBaseURL(info.BaseURL), lendgraph.WithAPIKey(info.Keys[0].Key))
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.Agents.List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 50 {
		t.Errorf("total %d, want 50", page.Total)
	}
	if page, err := c.Loans.List(ctx, nil); err != nil || page.Total != 9 {
		t.Errorf("loans: %v %v, want the file's 9", page, err)
	}
	var ceiling *lendgraph.MaxRowsError
	if _, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV}); !errors.As(err, &ceiling) || ceiling.MaxRows != 20 {
		t.Errorf("the file's entitlement: %v", err)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("fake did not stop cleanly on SIGINT: %v", err)
	}
}

// TestEnrichProgressCountsCacheHits: rows served from the cache are handled
// rows, so the progress of a job with cache hits ends at 100%.
func TestEnrichProgressCountsCacheHits(t *testing.T) {
	c := newCLI(t)
	ids, want := propertyIDs(t, c, 3)
	if _, err := c.srv.Client().Properties.Enrich(context.Background(), want[0], nil); err != nil {
		t.Fatal(err)
	}
	r := c.run("enrich", "--ids", ids, "--yes", "-o", c.path("owners.ndjson"))
	wantCode(t, r, 0)
	var last string
	for line := range strings.Lines(r.stderr) {
		if strings.HasPrefix(line, "enrichment: ") {
			last = line
		}
	}
	if last != "enrichment: 3/3 rows (100%)\n" {
		t.Errorf("progress ends with %q, want 3/3 (100%%):\n%s", last, r.stderr)
	}
	if !strings.Contains(r.stderr, "1 from the cache") {
		t.Errorf("summary:\n%s", r.stderr)
	}
}

// TestReport_InterruptedOnce: an interrupt that stopped several calls at
// once (planning sizes shards concurrently and joins their errors, each
// ending with the signal's cause) prints the cause once, exit 130.
func TestReport_InterruptedOnce(t *testing.T) {
	const cause = "interrupt signal received"
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New(cause))
	sig := context.Cause(ctx)
	joined := fmt.Errorf("export: sizing the shards by state: %w", errors.Join(sig, sig,
		fmt.Errorf("POST /v1/agents: %w: %w", context.Canceled, sig), sig))
	for _, err := range []error{joined, &interruptedError{joined.Error()}} {
		var stderr bytes.Buffer
		a := &app{env: env{stderr: &stderr}, started: true, cmdPath: "lendgraph"}
		if code := a.report(ctx, err); code != exitInterrupted {
			t.Errorf("%T: exit %d, want %d", err, code, exitInterrupted)
		}
		if n := strings.Count(stderr.String(), cause); n != 1 {
			t.Errorf("%T: %q printed %d times:\n%s", err, cause, n, stderr.String())
		}
		if !strings.Contains(stderr.String(), "sizing the shards by state") || !strings.Contains(stderr.String(), "POST /v1/agents") {
			t.Errorf("%T: the message lost a line that says something else:\n%s", err, stderr.String())
		}
	}
}
