package main

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	"gocloud.dev/blob"
)

// exportCLI is a CLI against a fake of n agents whose organization may
// deliver maxRows of them at once.
func exportCLI(t testing.TB, n int, maxRows int64, opts ...lendgraphtest.Option) *cli {
	// Every record has a state unless a test says otherwise (WithMissingField).
	c := newCLI(t, append([]lendgraphtest.Option{lendgraphtest.WithRows("agents", n), lendgraphtest.WithNoStateShare(0)}, opts...)...)
	c.srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: maxRows})
	return c
}

// jobsRun counts the delivery jobs the fake ran (planning probes start none).
func jobsRun(srv *lendgraphtest.Server) int {
	n := 0
	for _, j := range srv.Jobs() {
		if j.Kind == "delivery" {
			n++
		}
	}
	return n
}

func TestExportPlanOnlyThenRunThenResume(t *testing.T) {
	c := exportCLI(t, 1500, 100)
	dir := c.path("agents")
	r := c.run("export", "agents", "--by", "state,city", "--out", dir, "--plan-only")
	wantCode(t, r, 0)
	if jobsRun(c.srv) != 0 {
		t.Fatalf("--plan-only ran %d jobs", jobsRun(c.srv))
	}
	p, err := export.ReadPlan(context.Background(), openExport(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Shards) < 20 || p.EstimatedRows() != 1500 || p.MaxRows != 100 {
		t.Fatalf("plan: %d shards, %d rows, ceiling %d", len(p.Shards), p.EstimatedRows(), p.MaxRows)
	}
	if lines := strings.Count(r.stdout, "\n"); lines != len(p.Shards) || !strings.Contains(r.stdout, "state=CA/city=Los Angeles\t") {
		t.Errorf("stdout lists %d lines for %d shards:\n%s", lines, len(p.Shards), r.stdout)
	}
	for _, want := range []string{"plan: agents by state,city as parquet", "1500 rows", "ceiling 100 rows a delivery"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}

	// The run uses the plan in the directory: no sizing again.
	c.srv.ResetRequests()
	r = c.run("export", "agents", "--by", "state,city", "--out", dir, "--yes")
	wantCode(t, r, 0)
	if n := c.srv.CountRequests("POST", "/v1/agents"); n != 0 {
		t.Errorf("the run listed agents %d times; the plan was made already", n)
	}
	if jobsRun(c.srv) != len(p.Shards) {
		t.Errorf("%d jobs for %d shards", jobsRun(c.srv), len(p.Shards))
	}
	for _, want := range []string{"shard state=CA/city=Los Angeles: landed", "committed", "_SUCCESS", "1500 rows landed, 1500 planned", "1500 rows charged by this run"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "state=CA", "city=Los Angeles", "part-00000.parquet")); err != nil {
		t.Error(err)
	}

	// Again, with --json: nothing to do but check.
	r = c.run("--json", "export", "agents", "--out", dir, "--yes")
	wantCode(t, r, 0)
	var res exportResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("stdout is not the JSON result: %v\n%s", err, r.stdout)
	}
	if !res.Complete || res.Skipped != len(p.Shards) || res.Submitted != 0 || res.LandedRows != 1500 || res.ChargedRows != 1500 || res.RunChargedRows != 0 {
		t.Errorf("result %+v", res)
	}
	// Without --json: a rerun that charged nothing says so.
	r = c.run("export", "agents", "--out", dir, "--yes")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "0 rows charged by this run (1500 rows and 1500 credits for the landed shards in all)") {
		t.Errorf("the summary of a rerun:\n%s", r.stderr)
	}
	if jobsRun(c.srv) != len(p.Shards) {
		t.Errorf("the rerun started jobs")
	}

	// Other flags on the same directory: refused.
	r = c.run("export", "agents", "--by", "state", "--out", dir, "--yes")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "other flags") {
		t.Errorf("stderr: %s", r.stderr)
	}
}

func TestExportCoverageFailure(t *testing.T) {
	c := exportCLI(t, 1500, 2000, lendgraphtest.WithMissingField("agents", "state", 30))
	dir := c.path("agents")
	r := c.run("export", "agents", "--by", "state", "--out", dir, "--yes")
	wantCode(t, r, 1)
	for _, want := range []string{"1500", "1450", "50 records fall in no shard", "--include-missing", "Nothing was charged"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if jobsRun(c.srv) != 0 {
		t.Errorf("%d jobs ran after a failed coverage check", jobsRun(c.srv))
	}
	r = c.run("export", "agents", "--by", "state", "--out", dir, "--yes", "--include-missing", "--format", "csv")
	wantCode(t, r, 0)
	m, err := manifestOf(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := m.Status("state=" + export.MissingValue)
	if !ok || st.Rows != 50 || st.File != "state=__HIVE_DEFAULT_PARTITION__/part-00000.csv" {
		t.Errorf("the shard of agents without a state: %+v", st)
	}
}

func TestExportOneShardFromAPlanFile(t *testing.T) {
	c := exportCLI(t, 1500, 2000)
	r := c.run("--json", "export", "agents", "--by", "state", "--out", c.path("planning"), "--plan-only")
	wantCode(t, r, 0)
	planJSON := c.path("plan.json")
	if err := os.WriteFile(planJSON, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := c.path("agents")
	r = c.run("export", "--plan", planJSON, "--shard", "state=CA", "--out", dir, "--yes")
	wantCode(t, r, 0)
	if jobsRun(c.srv) != 1 || !strings.Contains(r.stderr, "not landed yet") {
		t.Errorf("%d jobs; stderr:\n%s", jobsRun(c.srv), r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "_SUCCESS")); !os.IsNotExist(err) {
		t.Error("_SUCCESS after one shard")
	}
	r = c.run("export", "--plan", planJSON, "--shard", "state=CA", "--out", dir, "--by", "city")
	wantCode(t, r, 2)
}

func TestExportUsage(t *testing.T) {
	c := exportCLI(t, 100, 2000)
	for _, args := range [][]string{
		{"export", "agents", "--by", "state"},                                      // no --out
		{"export", "agents", "--out", "x"},                                         // no --by
		{"export", "sales", "--by", "state", "--out", "x"},                         // no delivery of sales
		{"export", "agents", "--by", "state", "--out", "x", "--format", "xml"},     // bad format
		{"export", "agents", "--by", "state", "--out", "x", "--values", "state"},   // bad --values
		{"export", "agents", "--by", "state", "--out", "x", "--concurrency", "0"},  // bad concurrency
		{"export", "agents", "--by", "_hidden", "--out", "x", "--max-rows", "100"}, // hidden directory
		{"export", "agents", "--by", "state", "--out", "x"},                        // off a terminal without --yes
	} {
		r := c.run(args...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
	}
	if jobsRun(c.srv) != 0 {
		t.Errorf("usage errors ran %d jobs", jobsRun(c.srv))
	}
}

// openExport opens an export's destination (a directory or a URL) for the
// test, closed when it ends.
func openExport(t testing.TB, dest string) *export.Storage {
	t.Helper()
	st, err := export.Open(context.Background(), dest)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// manifestOf is where the export in dest stands (export.ReadManifest).
func manifestOf(t testing.TB, dest string) (*export.Manifest, error) {
	t.Helper()
	return export.ReadManifest(context.Background(), openExport(t, dest))
}

// rawBucket opens the bucket (and prefix) of an s3:// URL with gocloud
// itself, for a test's own reads and writes.
func rawBucket(t testing.TB, raw string) *blob.Bucket {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	prefix := strings.Trim(u.Path, "/")
	u.Path = ""
	b, err := blob.OpenBucket(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	if prefix != "" {
		b = blob.PrefixedBucket(b, prefix+"/")
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}
