package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
)

// parquetColumns is the names of a parquet file's top-level columns, in
// the file's order.
func parquetColumns(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, f := range openParquet(t, path).Schema().Fields() {
		out = append(out, f.Name())
	}
	return out
}

// jsonKeys is the member names of each object, in order, of ndjson or of
// a json array.
func jsonKeys(t *testing.T, text string) [][]string {
	t.Helper()
	var objects []json.RawMessage
	if strings.HasPrefix(text, "[") {
		if err := json.Unmarshal([]byte(text), &objects); err != nil {
			t.Fatal(err)
		}
	} else {
		for line := range strings.Lines(text) {
			objects = append(objects, json.RawMessage(line))
		}
	}
	var out [][]string
	for _, o := range objects {
		dec := jsontext.NewDecoder(bytes.NewReader(o))
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
			t.Fatalf("not an object: %s", o)
		}
		var keys []string
		for dec.PeekKind() == '"' {
			name, err := dec.ReadToken()
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, name.String())
			if err := dec.SkipValue(); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, keys)
	}
	return out
}

// rowsInputs is a fake of n agents (maxRows a delivery) and two inputs
// for rows: a delivery file of 50 agents (ndjson.gz) and a csv export of
// all of them by state.
func rowsInputs(t *testing.T, n int, maxRows int64) (c *cli, src, dir string) {
	t.Helper()
	c = exportCLI(t, n, maxRows)
	src = c.path("agents.ndjson.gz")
	wantCode(t, c.run("deliver", "agents", "--format", "ndjson", "--limit", "50", "-o", src), 0)
	dir = c.path("agents")
	wantCode(t, c.run("export", "agents", "--by", "state", "--out", dir, "--yes", "--format", "csv"), 0)
	return c, src, dir
}

// TestRows_FieldsKeepTheirOrder: --fields gives the columns' order in
// every output format, parquet included (a parquet group sorts its fields
// by name unless told otherwise), from a file of each kind and from an
// export directory.
func TestRows_FieldsKeepTheirOrder(t *testing.T) {
	c, src, dir := rowsInputs(t, 600, 200)
	order := []string{"state", "id", "fullName"}
	fields := strings.Join(order, ",")
	for _, in := range []string{src, dir} {
		for _, to := range []string{"ndjson", "json", "csv", "parquet"} {
			r := c.run("rows", in, "--to", to, "--fields", fields)
			wantCode(t, r, 0)
			var got [][]string
			switch to {
			case "csv":
				recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
				if err != nil || len(recs) < 2 {
					t.Fatalf("%s --to csv: %d records, %v", in, len(recs), err)
				}
				got = [][]string{recs[0]}
			case "parquet":
				out := c.path("order.parquet")
				if err := os.WriteFile(out, []byte(r.stdout), 0o600); err != nil {
					t.Fatal(err)
				}
				got = [][]string{parquetColumns(t, out)}
				if in == src { // the values sit in their columns
					type agent struct{ ID, State, FullName string }
					pick := func(rows []lendgraph.Agent) (out []agent) {
						for _, a := range rows {
							out = append(out, agent{a.ID, a.State, a.FullName})
						}
						return out
					}
					if w, g := pick(fileRows[lendgraph.Agent](t, src, lendgraph.FormatNDJSON)), pick(fileRows[lendgraph.Agent](t, out, lendgraph.FormatParquet)); !slices.Equal(w, g) {
						t.Errorf("--to parquet --fields %s: %d rows differ from the %d of the source", fields, len(g), len(w))
					}
				}
			default:
				got = jsonKeys(t, r.stdout)
				if len(got) < 2 {
					t.Fatalf("%s --to %s: %d objects:\n%.300s", in, to, len(got), r.stdout)
				}
			}
			for i, keys := range got {
				if !slices.Equal(keys, order) {
					t.Errorf("%s --to %s --fields %s: row %d has the columns %v", filepath.Base(in), to, fields, i, keys)
					break
				}
			}
		}
	}
	// A parquet input is copied with its own schema, narrowed to --fields
	// in their order.
	r := c.run("rows", testFile(t, "nested.parquet"), "--to", "parquet", "--fields", "note,office,id")
	wantCode(t, r, 0)
	out := c.path("nested-order.parquet")
	if err := os.WriteFile(out, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := parquetColumns(t, out); !slices.Equal(got, []string{"note", "office", "id"}) {
		t.Errorf("parquet -> parquet --fields note,office,id: columns %v", got)
	}
}

// TestRows_ExportDirectory: rows DIR reads an export's dataset as
// export.Rows does, whatever its format, and refuses an incomplete one
// unless --allow-incomplete is given.
func TestRows_ExportDirectory(t *testing.T) {
	c := exportCLI(t, 900, 300)
	ctx := context.Background()
	want := map[string]bool{}
	for a, err := range c.srv.Client().Agents.All(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		want[a.ID] = true
	}
	ids := func(t *testing.T, ndjson string) map[string]int {
		t.Helper()
		seen := map[string]int{}
		for line := range strings.Lines(ndjson) {
			var row struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal([]byte(line), &row); err != nil || row.ID == "" {
				t.Fatalf("line %q: %v", line, err)
			}
			seen[row.ID]++
		}
		return seen
	}
	check := func(t *testing.T, what string, seen map[string]int) {
		t.Helper()
		for id, n := range seen {
			if n != 1 || !want[id] {
				t.Errorf("%s: id %s %d times, listed by the fake: %v", what, id, n, want[id])
			}
		}
		if len(seen) != len(want) {
			t.Errorf("%s: %d ids, the fake lists %d", what, len(seen), len(want))
		}
	}
	for _, format := range []string{"parquet", "csv", "json", "ndjson"} {
		t.Run(format, func(t *testing.T) {
			dir := c.path("agents-" + format)
			wantCode(t, c.run("export", "agents", "--by", "state", "--out", dir, "--yes", "--format", format), 0)
			r := c.run("rows", dir)
			wantCode(t, r, 0)
			check(t, "rows DIR", ids(t, r.stdout))

			// --to parquet reads the dataset twice (types, then rows).
			r = c.run("rows", dir, "--to", "parquet")
			wantCode(t, r, 0)
			out := filepath.Join(t.TempDir(), "all.parquet")
			if err := os.WriteFile(out, []byte(r.stdout), 0o600); err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, row := range fileRows[lendgraph.Agent](t, out, lendgraph.FormatParquet) {
				seen[row.ID]++
			}
			check(t, "rows DIR --to parquet", seen)
		})
	}

	// Without _SUCCESS: refused, then read with --allow-incomplete.
	dir := c.path("agents-parquet")
	if err := os.Remove(filepath.Join(dir, export.SuccessFile)); err != nil {
		t.Fatal(err)
	}
	r := c.run("rows", dir)
	if r.code != exitFailure || !strings.Contains(r.stderr, "not complete") || !strings.Contains(r.stderr, "--allow-incomplete") || r.stdout != "" {
		t.Errorf("rows on an export without _SUCCESS: exit %d\nstdout: %.200s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = c.run("rows", dir, "--allow-incomplete")
	wantCode(t, r, 0)
	check(t, "rows DIR --allow-incomplete", ids(t, r.stdout))

	// A directory that holds no export, and --format on a directory.
	r = c.run("rows", c.dir)
	if r.code != exitFailure || !strings.Contains(r.stderr, "not an export directory") {
		t.Errorf("rows on a plain directory: exit %d, stderr: %s", r.code, r.stderr)
	}
	r = c.run("rows", dir, "--format", "csv")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--format") {
		t.Errorf("rows DIR --format csv: exit %d, stderr: %s", r.code, r.stderr)
	}
}

// TestRows_UnknownFields: a --fields name that no row has is an error
// naming it and the columns the rows have, in every output format, from a
// file of each kind and from an export directory (not a column of empty
// cells and exit 0); with --to parquet nothing is written. An export's
// _manifest.json given as FILE is refused with a hint to pass its
// directory.
func TestRows_UnknownFields(t *testing.T) {
	c, src, dir := rowsInputs(t, 300, 100)
	for _, in := range []string{src, dir, testFile(t, "nested.parquet")} {
		for _, to := range []string{"ndjson", "json", "csv", "parquet"} {
			r := c.run("rows", in, "--to", to, "--fields", "id,nosuch")
			if r.code != exitFailure || !strings.Contains(r.stderr, `"nosuch"`) || !strings.Contains(r.stderr, "id") {
				t.Errorf("%s --to %s --fields id,nosuch: exit %d, want %d naming the field\nstderr: %s", filepath.Base(in), to, r.code, exitFailure, r.stderr)
			}
			if in != testFile(t, "nested.parquet") && !strings.Contains(r.stderr, "state") {
				t.Errorf("%s --to %s: the error does not list the rows' columns: %s", filepath.Base(in), to, r.stderr)
			}
			if to == "parquet" && r.stdout != "" {
				t.Errorf("%s --to parquet --fields id,nosuch: %d bytes written", filepath.Base(in), len(r.stdout))
			}
		}
	}
	r := c.run("rows", filepath.Join(dir, export.ManifestFile))
	if r.code != exitUsage || !strings.Contains(r.stderr, "manifest") || !strings.Contains(r.stderr, "lendgraph rows "+dir) {
		t.Errorf("rows DIR/_manifest.json: exit %d, stderr: %s", r.code, r.stderr)
	}
}

// TestRows_EmptyDatasetCSVHeader: an export of no rows (--allow-empty)
// read as csv is a header line, the columns its plan delivers: the
// --fields it was planned with, else the fields the reference shows.
func TestRows_EmptyDatasetCSVHeader(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct {
		fields []string
		want   string
	}{
		{nil, "city,fullName,id,state,transactionCount\n"},
		{[]string{"--fields", "fullName"}, "id,fullName,state\n"},
	} {
		dir := c.path(fmt.Sprintf("empty%d", len(tc.fields)))
		r := c.run(append([]string{"export", "agents", "--by", "state", "--filter", "state=ZZ", "--allow-empty", "--out", dir}, tc.fields...)...)
		wantCode(t, r, 0)
		r = c.run("rows", dir, "--to", "csv")
		wantCode(t, r, 0)
		if r.stdout != tc.want {
			t.Errorf("rows of an empty export %v --to csv: %q, want the header %q", tc.fields, r.stdout, tc.want)
		}
	}
}

// TestRows_FieldsTypo: a --fields name that differs from a column only by
// case or a letter or two fails before a byte is written, saying which
// column was meant.
func TestRows_FieldsTypo(t *testing.T) {
	c, src, dir := rowsInputs(t, 300, 100)
	for _, in := range []string{src, dir} {
		for _, to := range []string{"ndjson", "json", "csv"} {
			for typo, meant := range map[string]string{"FullName": "fullName", "fulName": "fullName"} {
				r := c.run("rows", in, "--to", to, "--fields", "id,"+typo)
				if r.code != exitFailure || r.stdout != "" || !strings.Contains(r.stderr, "did you mean "+meant+"?") {
					t.Errorf("%s --to %s --fields id,%s: exit %d, %d bytes written\n%s", filepath.Base(in), to, typo, r.code, len(r.stdout), r.stderr)
				}
			}
		}
	}
}
