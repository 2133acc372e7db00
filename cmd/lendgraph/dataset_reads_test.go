package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// TestDatasetReads_Documented: the export command's help, docs/data.md and
// export/doc.go show the same DuckDB and Spark reads (those of
// datasetReads), and no other data glob.
func TestDatasetReads_Documented(t *testing.T) {
	c := newCLI(t)
	help := c.run("export", "--help")
	wantCode(t, help, 0)
	docs := map[string]string{"lendgraph export --help": help.stdout}
	for _, name := range []string{"../../docs/data.md", "../../export/doc.go"} {
		docs[filepath.Base(name)] = mustRead(t, name)
	}
	for where, text := range docs {
		for _, r := range datasetReads() {
			for _, line := range []string{r.duckdb, r.spark} {
				if !strings.Contains(text, line) {
					t.Errorf("%s does not show the %s read %s", where, r.format, line)
				}
			}
		}
		// The glob that matched _manifest.json.
		if strings.Contains(text, "/**/*.") {
			t.Errorf("%s still shows a data glob that matches the dataset's own files (/**/*.)", where)
		}
		if !strings.Contains(text, ".locks") {
			t.Errorf("%s does not say what .locks/ is", where)
		}
	}
}

// TestDatasetReads runs every documented DuckDB read, as written, against
// an export of its format (two partition levels, records without a state
// under __HIVE_DEFAULT_PARTITION__, and the dataset's own files beside the
// data: _manifest.json, _SUCCESS, _plan.json, .locks/), and checks that it
// reads every record the fake holds exactly once, with its state.
func TestDatasetReads(t *testing.T) {
	if testing.Short() {
		t.Skip("DuckDB: skipped with -short")
	}
	duck := duckdbNode(t)
	c := exportCLI(t, 600, 25, lendgraphtest.WithNoStateShare(0.05))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	want := map[string]string{} // id -> state
	for a, err := range c.srv.Client().Agents.All(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		want[a.ID] = a.State
	}
	script := filepath.Join(t.TempDir(), "query.cjs")
	if err := os.WriteFile(script, []byte(duckdbQueryScript), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, r := range datasetReads() {
		t.Run(r.format, func(t *testing.T) {
			dir := c.path("agents-" + r.format)
			// --plan-only first leaves DIR/_plan.json, which the run uses.
			wantCode(t, c.run("export", "agents", "--by", "state,city", "--include-missing", "--out", dir, "--format", r.format, "--plan-only"), 0)
			wantCode(t, c.run("export", "--out", dir, "--yes"), 0)
			for _, own := range []string{"_manifest.json", "_SUCCESS", "_plan.json", ".locks"} {
				if _, err := os.Stat(filepath.Join(dir, own)); err != nil {
					t.Fatalf("the export has no %s beside its data: %v", own, err)
				}
			}
			// The query exactly as documented, DIR replaced by the directory.
			query := strings.ReplaceAll(r.duckdb, "DIR", strings.ReplaceAll(dir, "'", "''"))
			out, err := exec.CommandContext(ctx, "node", script, duck, "SELECT id, coalesce(state, '') FROM ("+query+")").Output()
			if err != nil {
				t.Fatalf("DuckDB: %s: %v\n%s", query, err, stderrOf(err))
			}
			var rows [][2]string
			if err := json.Unmarshal(out, &rows); err != nil {
				t.Fatalf("DuckDB printed %.300s: %v", out, err)
			}
			seen := map[string]int{}
			for _, row := range rows {
				id, state := row[0], row[1]
				seen[id]++
				if st, ok := want[id]; !ok || st != state {
					t.Errorf("id %s with state %q; the fake has it: %v, state %q", id, state, ok, st)
				}
			}
			for id, n := range seen {
				if n != 1 {
					t.Errorf("id %s read %d times", id, n)
				}
			}
			if len(rows) != len(want) || len(seen) != len(want) {
				t.Errorf("%s: %d rows, %d distinct ids; the fake holds %d agents", query, len(rows), len(seen), len(want))
			}
		})
	}
}

// duckdbQueryScript runs one query with DuckDB and prints its rows as a
// JSON array of arrays of strings.
const duckdbQueryScript = `
const { DuckDBInstance } = require(process.argv[2] + '/node_modules/@duckdb/node-api');
(async () => {
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  const rows = (await con.runAndReadAll(process.argv[3])).getRows();
  process.stdout.write(JSON.stringify(rows.map(r => r.map(String))));
})().catch(e => { console.error(String(e)); process.exit(1); });
`
