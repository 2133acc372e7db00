package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// TestFakeParquetWithDuckDB reads a parquet delivery of the fake (written
// by the root module's own writer, internal/pqwrite) with DuckDB, a reader
// written by others: the columns have the types the reference promises
// (scalars keep their types, nested fields are JSON), there are as many
// rows as delivered over three row groups, and every row holds the values
// of the same delivery in ndjson.
func TestFakeParquetWithDuckDB(t *testing.T) {
	if testing.Short() {
		t.Skip("DuckDB: skipped with -short")
	}
	duck := duckdbNode(t)
	const rows = 45_000 // three row groups of at most 20,000
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithRows("agents", rows), lendgraphtest.WithJobRate("delivery", 1e12))
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: rows})
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	files := map[lendgraph.Format][]byte{}
	for _, f := range []lendgraph.Format{lendgraph.FormatParquet, lendgraph.FormatNDJSON} {
		job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: f})
		if err == nil {
			_, err = job.Wait(ctx, lendgraph.WithPollInterval(10*time.Millisecond, 100*time.Millisecond))
		}
		var buf bytes.Buffer
		if err == nil {
			_, err = job.Download(ctx, &buf)
		}
		if err != nil {
			t.Fatalf("%s delivery: %v", f, err)
		}
		files[f] = buf.Bytes()
	}
	dir := t.TempDir()
	pq, script := filepath.Join(dir, "agents.parquet"), filepath.Join(dir, "read.cjs")
	if err := os.WriteFile(pq, files[lendgraph.FormatParquet], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte(duckdbParquetScript), 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := exec.CommandContext(ctx, "node", script, duck, pq).Output()
	if err != nil {
		t.Fatalf("DuckDB: %v\n%s", err, stderrOf(err))
	}
	var got struct {
		Types  map[string]string `json:"types"`
		Groups int               `json:"groups"`
		Rows   []string          `json:"rows"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("DuckDB printed %.300s: %v", raw, err)
	}

	want := map[string]map[string]any{}
	for r, err := range lendgraph.DecodeRows[lendgraph.Row](bytes.NewReader(files[lendgraph.FormatNDJSON]), lendgraph.FormatNDJSON) {
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		for _, name := range r.Names() {
			var v any
			if err := r.Decode(name, &v); err != nil {
				t.Fatal(err)
			}
			m[name] = v
		}
		id, _ := m["id"].(string)
		want[id] = m
	}
	if len(got.Rows) != rows || len(want) != rows || got.Groups != 3 {
		t.Fatalf("DuckDB reads %d rows in %d row groups; the ndjson delivery has %d (want %d rows, 3 groups)", len(got.Rows), got.Groups, len(want), rows)
	}
	wantTypes := map[string]string{"id": "VARCHAR", "fullName": "VARCHAR", "transactionCount": "BIGINT", "volume": "DOUBLE",
		"isTeamLead": "BOOLEAN", "office": "JSON", "tags": "JSON"}
	for col, typ := range wantTypes {
		if got.Types[col] != typ {
			t.Errorf("column %s is %s in DuckDB, want %s (all: %v)", col, got.Types[col], typ, got.Types)
		}
	}
	for _, line := range got.Rows {
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("DuckDB row %.200s: %v", line, err)
		}
		// A member a row lacks is a column's null in parquet.
		maps.DeleteFunc(row, func(_ string, v any) bool { return v == nil })
		id, _ := row["id"].(string)
		if d := cmp.Diff(want[id], row); d != "" {
			t.Fatalf("row %s differs from the ndjson delivery's (-ndjson +DuckDB):\n%s", id, d)
		}
	}
}

// duckdbParquetScript prints a parquet file's column types, its number of
// row groups and its rows as JSON objects (JSON columns as JSON values).
const duckdbParquetScript = `
const { DuckDBInstance } = require(process.argv[2] + '/node_modules/@duckdb/node-api');
(async () => {
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  const file = "'" + process.argv[3].replaceAll("'", "''") + "'";
  const types = Object.fromEntries((await con.runAndReadAll('DESCRIBE SELECT * FROM read_parquet(' + file + ')')).getRows().map(r => [r[0], r[1]]));
  const groups = (await con.runAndReadAll('SELECT count(DISTINCT row_group_id) FROM parquet_metadata(' + file + ')')).getRows()[0][0];
  const rows = (await con.runAndReadAll('SELECT to_json(t)::VARCHAR FROM read_parquet(' + file + ') t')).getRows().map(r => r[0]);
  process.stdout.write(JSON.stringify({ types, groups: Number(groups), rows }));
})().catch(e => { console.error(e); process.exit(1); });
`
