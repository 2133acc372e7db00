package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
)

// duckdbNodeVersion is the @duckdb/node-api release the end-to-end test
// reads the dataset with (no Python registry is needed).
const duckdbNodeVersion = "1.5.6-r.1"

// TestExportEndToEndWithDuckDB runs the export the way a data engineer
// would: against `lendgraph fake --entitle agents=2000 --rows 30000` (so
// states are above the ceiling and split by city), killed with SIGKILL in
// the middle, run again, and the dataset read by DuckDB: every id the fake
// lists is there exactly once, nothing else is, and there is one partition
// directory per (state, city).
func TestExportEndToEndWithDuckDB(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: skipped with -short")
	}
	duck := duckdbNode(t)

	// The fake, as a harness in any language runs it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	baseURL, key := startFake(ctx, t, "--entitle", "agents=2000", "--rows", "30000")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		lendgraph.EnvBaseURL + "=" + baseURL, lendgraph.EnvAPIKey + "=" + key}

	dir := filepath.Join(t.TempDir(), "agents")
	// --include-missing: records without a state (the fake has some) land
	// under state=__HIVE_DEFAULT_PARTITION__, which DuckDB reads as NULL.
	args := []string{"export", "agents", "--by", "state,city", "--out", dir, "--yes", "--include-missing", "--concurrency", "8"}

	// First run: killed once a few shards have landed.
	first := exec.CommandContext(ctx, binary, args...)
	first.Env = env
	var firstErr strings.Builder
	first.Stderr = &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }()
	landed := 0
	for landed < 3 {
		select {
		case err := <-exited:
			t.Fatalf("the first run ended before it could be killed (%v):\n%s", err, firstErr.String())
		case <-time.After(5 * time.Millisecond):
		}
		if m, err := manifestOf(t, dir); err == nil {
			landed = 0
			for _, s := range m.Shards {
				if s.State == export.StateLanded {
					landed++
				}
			}
		}
	}
	if err := first.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	<-exited
	m, err := manifestOf(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, export.SuccessFile)); err == nil {
		t.Fatalf("_SUCCESS after a killed run with %d of %d shards landed", landed, len(m.Shards))
	}
	t.Logf("killed with %d of %d shards landed", landed, len(m.Shards))
	// A kill between a submit and its answer leaves the shard submitting:
	// the service may hold its job, and only the user's say-so submits it
	// again (TestExportNeverChargesTwiceAfterLostAnswers tests the refusal).
	for _, s := range m.Shards {
		if s.State == export.StateSubmitting {
			t.Logf("shard %s was killed mid-submit: the second run passes --resubmit-uncertain", s.Name)
			args = append(args, "--resubmit-uncertain")
			break
		}
	}

	// Second run: the same command resumes and completes.
	second := exec.CommandContext(ctx, binary, args...)
	second.Env = env
	msg, err := second.CombinedOutput()
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, msg)
	}
	if !strings.Contains(string(msg), "committed") {
		t.Errorf("second run:\n%s", msg)
	}

	// What the fake lists for the exported query.
	c, err := lendgraph.NewClient(lendgraph.WithBaseURL(baseURL), lendgraph.WithAPIKey(key))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	wantParts := map[[2]string]bool{}
	for a, err := range c.Agents.All(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100}}) {
		if err != nil {
			t.Fatal(err)
		}
		want[a.ID] = true
		wantParts[[2]string{a.State, a.City}] = true
	}

	// What DuckDB reads.
	script := filepath.Join(t.TempDir(), "read.cjs")
	if err := os.WriteFile(script, []byte(duckdbScript), 0o644); err != nil {
		t.Fatal(err)
	}
	node := exec.CommandContext(ctx, "node", script, duck, dir)
	raw, err := node.Output()
	if err != nil {
		t.Fatalf("DuckDB: %v\n%s", err, stderrOf(err))
	}
	var got struct {
		IDs   []string    `json:"ids"`
		Parts [][2]string `json:"parts"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("DuckDB printed %.300s: %v", raw, err)
	}
	seen := map[string]int{}
	for _, id := range got.IDs {
		seen[id]++
	}
	for id, n := range seen {
		if n != 1 || !want[id] {
			t.Errorf("id %s: %d rows in the dataset, listed by the fake: %v", id, n, want[id])
		}
	}
	for id := range want {
		if seen[id] == 0 {
			t.Errorf("id %s is missing from the dataset", id)
		}
	}
	if len(got.IDs) != len(want) {
		t.Errorf("DuckDB reads %d rows; the fake lists %d agents", len(got.IDs), len(want))
	}

	// One partition directory per value.
	var dirs [][2]string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "part-") {
			return err
		}
		rel, _ := filepath.Rel(dir, filepath.Dir(p))
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 2 || !strings.HasPrefix(parts[0], "state=") || !strings.HasPrefix(parts[1], "city=") {
			t.Errorf("file %s is not at DIR/state=*/city=*/", rel)
			return nil
		}
		var kv [2]string
		for i, part := range parts {
			v, _ := url.PathUnescape(part[strings.Index(part, "=")+1:])
			if v == export.MissingValue {
				v = ""
			}
			kv[i] = v
		}
		dirs = append(dirs, kv)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(dirs, func(a, b [2]string) int { return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1]) })
	if len(slices.Compact(slices.Clone(dirs))) != len(dirs) {
		t.Errorf("two directories for one value: %v", dirs)
	}
	if len(dirs) != len(wantParts) || len(got.Parts) != len(wantParts) {
		t.Errorf("%d partition directories and %d (state, city) values in DuckDB; the fake has %d", len(dirs), len(got.Parts), len(wantParts))
	}
	for _, p := range got.Parts {
		if !wantParts[p] || !slices.Contains(dirs, p) {
			t.Errorf("DuckDB reads partition %v: in the fake %v, a directory %v", p, wantParts[p], slices.Contains(dirs, p))
		}
	}
}

// duckdbScript prints the ids and the distinct (state, city) partitions
// DuckDB reads from the dataset, as JSON (NULL as "").
const duckdbScript = `
const { DuckDBInstance } = require(process.argv[2] + '/node_modules/@duckdb/node-api');
(async () => {
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  const src = "read_parquet('" + process.argv[3].replaceAll("'", "''") + "/**/part-*.parquet', hive_partitioning = true)";
  const ids = (await con.runAndReadAll('SELECT id FROM ' + src)).getRows().map(r => r[0]);
  const parts = (await con.runAndReadAll("SELECT DISTINCT coalesce(state, ''), coalesce(city, '') FROM " + src)).getRows();
  process.stdout.write(JSON.stringify({ ids, parts }));
})().catch(e => { console.error(e); process.exit(1); });
`

// duckdbNode returns a directory whose node_modules holds @duckdb/node-api,
// installing it from the npm registry into the user cache the first time.
// The test is skipped where node or npm is missing.
func duckdbNode(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: skipping the DuckDB check", tool)
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "lendgraph-go", "duckdb-node-"+duckdbNodeVersion)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@duckdb", "node-api", "package.json")); err == nil {
		return dir
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("npm", "install", "--prefix", tmp, "--no-audit", "--no-fund", "--loglevel=error", "@duckdb/node-api@"+duckdbNodeVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("installing @duckdb/node-api: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, fs.ErrExist) {
		if _, serr := os.Stat(filepath.Join(dir, "node_modules")); serr != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

// startFake starts `lendgraph fake` as a process of its own, as a harness
// in any language runs it, with args after its address, and returns the
// base URL and the API key it printed. The process ends with the test.
func startFake(ctx context.Context, t *testing.T, args ...string) (baseURL, key string) {
	t.Helper()
	fake := exec.CommandContext(ctx, binary, append([]string{"--json", "fake", "--addr", "127.0.0.1:0"}, args...)...)
	fake.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	out, err := fake.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Process.Kill(); _ = fake.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the fake's address: %v", err)
	}
	var addr struct {
		BaseURL string `json:"baseUrl"`
		Keys    []struct {
			Key string `json:"key"`
		} `json:"keys"`
	}
	if err := json.Unmarshal([]byte(line), &addr); err != nil || len(addr.Keys) == 0 {
		t.Fatalf("the fake printed %q: %v", line, err)
	}
	return addr.BaseURL, addr.Keys[0].Key
}
