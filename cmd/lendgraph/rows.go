package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	pq "github.com/parquet-go/parquet-go"
	"github.com/spf13/cobra"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/parquet"
)

func (a *app) rowsCommand() *cobra.Command {
	var format, to string
	var fields []string
	var groupRows int64
	var incomplete bool
	cmd := &cobra.Command{
		Use:   "rows FILE|DIR|URL",
		Short: "Convert a delivery file's or an export's rows to ndjson, csv, json or parquet on stdout",
		Long: `rows reads a delivery file (.ndjson.gz, .json, .csv or .parquet; FILE "-" is
stdin) and writes its rows to stdout in another format, streaming: memory
stays flat whatever the file's size.

DIR is the directory of an export (lendgraph export --out DIR), URL an export
in an object store (--out s3://bucket/prefix), read straight from the store:
rows reads every file of the dataset, in the format its plan names, several
files at once (the order across files is not defined). An export without
_SUCCESS is refused unless --allow-incomplete is given (then the shards
landed so far are read). With --to parquet a dataset is read twice and its
columns typed from its rows, as for a json input, whatever its format.

The input format is detected from the first bytes (gzip: ndjson.gz, "PAR1":
parquet, '[': json, '{': plain ndjson) and then from the name; --format
overrides it. Without --fields, json and ndjson rows keep every column in
sorted order, and the csv header is the first row's columns, sorted; nested
values become JSON text in csv cells. A csv input carries no types: a cell
holding a JSON object or array reads back as that value, an empty cell as
null, the cells of a column of true/false (any case, as pandas' True/False)
as booleans, and any other cell as a JSON string holding exactly its text
(the zip 02134 stays "02134", numbers stay strings).

--fields names the columns; a name that no row has is an error naming it
and the columns the rows have (exit 1: after the rows, or with --to parquet
before anything is written). Give an export's directory, not its
_manifest.json.

` + parquetHelp,
		Example: `  lendgraph rows agents.parquet | head
  lendgraph rows agents/ --to csv --fields id,state,city > agents.csv
  lendgraph rows agents.ndjson.gz --to csv --fields id,fullName,state > agents.csv
  lendgraph rows agents.csv --to json > agents.json
  lendgraph rows agents.ndjson.gz --to parquet > agents.parquet`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains([]string{"auto", "ndjson", "json", "csv", "parquet"}, format) {
				return usagef("--format %q: use auto, ndjson, json, csv or parquet", format)
			}
			if !slices.Contains([]string{"ndjson", "csv", "json", "parquet"}, to) {
				return usagef("--to %q: use ndjson, csv, json or parquet", to)
			}
			if groupRows < 1 {
				return usagef("--row-group-size %d: give 1 or more rows", groupRows)
			}
			for _, f := range fields {
				if f == "" {
					return usagef("--fields: empty field name")
				}
			}
			if to == "parquet" {
				if f, ok := a.stdout.(*os.File); ok && isTerminal(f) {
					return usagef("--to parquet writes a binary file: redirect stdout (> FILE.parquet)")
				}
			}
			if err := notManifest(args[0]); err != nil {
				return err
			}
			var rows iter.Seq2[lendgraph.Row, error]
			ds, err := openDataset(cmd.Context(), args[0], format, incomplete)
			if err != nil {
				return err
			} else if ds != nil {
				defer ds.close()
				if to == "parquet" {
					return writeParquetTo(a.stdout, func(w io.Writer, opts []pq.WriterOption) error {
						return writeInferred(w, func() (iter.Seq2[lendgraph.Row, error], error) { return ds.rows, nil },
							ds.format == lendgraph.FormatCSV, fields, opts)
					}, groupRows)
				}
				rows = ds.rows
			} else if to == "parquet" {
				return a.rowsToParquet(a.stdout, args[0], format, fields, groupRows)
			} else {
				var closeIn func()
				if rows, closeIn, err = a.openRows(args[0], format); err != nil {
					return err
				}
				defer closeIn()
			}
			bw := bufio.NewWriterSize(a.stdout, 64<<10)
			rw := newRowWriter(to, bw, fields, a.say)
			if ds != nil {
				rw.empty = ds.header
			}
			for row, err := range rows {
				if err != nil {
					_ = bw.Flush()
					return err
				}
				if err := rw.write(row); err != nil {
					return err
				}
			}
			if err := rw.close(); err != nil {
				return err
			}
			return bw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&format, "format", "auto", "input format: auto, ndjson, json, csv or parquet")
	f.StringVar(&to, "to", "ndjson", "output format: ndjson, csv, json or parquet")
	f.Int64Var(&groupRows, "row-group-size", 65536, "with --to parquet: rows a row group")
	f.StringSliceVar(&fields, "fields", nil, "write only these columns, in this order (comma-separated)")
	f.BoolVar(&incomplete, "allow-incomplete", false, "with DIR: read an export that has no _SUCCESS yet (the shards landed so far)")
	return cmd
}

// dataset is an export directory, or an export in an object store,
// opened for reading.
type dataset struct {
	format lendgraph.Format
	header []string                        // the columns of its rows: the csv header of a dataset of no rows
	rows   iter.Seq2[lendgraph.Row, error] // every row, as export.Rows reads them; ranging it again reads again
	close  func() error
}

// openDataset opens path as an export (a directory, or an object store
// URL: export --out URL), whose rows are read straight from it; nil (and
// no error) when path is neither.
func openDataset(ctx context.Context, path, format string, incomplete bool) (*dataset, error) {
	if path == "-" {
		return nil, nil
	}
	if !isURL(path) {
		if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
			return nil, nil // a file, or an error openRows reports
		}
	}
	if format != "auto" {
		return nil, usagef("--format applies to a file: %s is an export, whose format its %s names", redactedOut(path), export.PlanFile)
	}
	dest, err := openDestination(ctx, "input", path)
	if err != nil {
		return nil, err
	}
	m, err := export.ReadManifest(ctx, dest)
	if errors.Is(err, export.ErrNoPlan) {
		dest.Close()
		return nil, fmt.Errorf("input: %s is not an export directory (no %s): %w", redactedOut(path), export.PlanFile, err)
	}
	if err != nil {
		dest.Close()
		return nil, fmt.Errorf("input: %s: %w", redactedOut(path), err)
	}
	var opts []export.ReadOption
	if incomplete {
		opts = append(opts, export.AllowIncomplete())
	} else if m.Verification == nil {
		landed := 0
		for _, s := range m.Shards {
			if s.State == export.StateLanded {
				landed++
			}
		}
		dest.Close()
		return nil, fmt.Errorf("input: the export in %s is not complete: not committed (%d of %d shards landed, no %s): run the shards left (and lendgraph export commit --plan %s), or read what landed with --allow-incomplete",
			redactedOut(path), landed, len(m.Shards), export.SuccessFile, commandOut(path))
	}
	return &dataset{format: m.Plan.Request.Format, header: planColumns(m.Plan), rows: export.Rows[lendgraph.Row](ctx, dest, opts...), close: dest.Close}, nil
}

// planColumns are the columns of an export's rows, as its plan tells: the
// fields it delivers, or without --fields the fields the reference shows
// for its resource (lendgraph fields RESOURCE), sorted as rows sorts a
// header.
func planColumns(p *export.Plan) []string {
	if len(p.Request.Fields) > 0 {
		return p.Request.Fields
	}
	return slices.Sorted(slices.Values(fieldNames(referenceFields(p.Resource))))
}

// notManifest refuses path when it is an export's manifest, whose rows are
// those of the export in its directory.
func notManifest(path string) error {
	if filepath.Base(path) != export.ManifestFile {
		return nil
	}
	dir := filepath.Dir(path)
	dest, err := export.Open(context.Background(), dir)
	if err != nil {
		return nil
	}
	defer dest.Close()
	if _, err := export.ReadPlan(context.Background(), dest); err != nil {
		return nil // some other file of that name: read as given
	}
	return usagef("%s is an export's manifest, not a delivery file: pass the export's directory to read its rows (lendgraph rows %s)", path, dir)
}

// fieldCheck finds the --fields names that no row has: a name the rows
// lack is a mistake (a typo, another resource's field), not a column of
// empty cells.
type fieldCheck struct {
	fields  []string
	missing map[string]bool // the names no row has had so far
	seen    map[string]bool // the rows' columns, gathered while a name is missing
	rows    int
}

func newFieldCheck(fields []string) *fieldCheck {
	c := &fieldCheck{fields: fields, missing: map[string]bool{}, seen: map[string]bool{}}
	for _, f := range fields {
		c.missing[f] = true
	}
	return c
}

// see notes one row's columns.
func (c *fieldCheck) see(row lendgraph.Row) {
	c.rows++
	if len(c.missing) == 0 {
		return
	}
	for name := range row.All() {
		c.seen[name] = true
		delete(c.missing, name)
	}
}

// err names the --fields no row had, and the columns the rows had; nil
// when every name was seen, or there were no rows.
func (c *fieldCheck) err() error {
	if len(c.missing) == 0 || c.rows == 0 {
		return nil
	}
	var missing []string
	for _, f := range c.fields {
		if c.missing[f] {
			missing = append(missing, strconv.Quote(f))
		}
	}
	have := slices.Sorted(maps.Keys(c.seen))
	return fmt.Errorf("--fields: no row has the field %s%s (the %d rows have: %s)",
		strings.Join(missing, ", "), meant(c.fields, c.missing, have), c.rows, strings.Join(have, ", "))
}

// first checks the --fields names against the first row, before anything
// is written: a name the row lacks that is a near miss of a column it has
// ("FullName" for fullName) is a typo, reported at once rather than after
// every row was written with an empty column.
func (c *fieldCheck) first(row lendgraph.Row) error {
	have := row.Names()
	var typos []string
	lacks := map[string]bool{}
	for _, f := range c.fields {
		if !row.Has(f) && suggestField(f, have) != "" {
			typos = append(typos, strconv.Quote(f))
			lacks[f] = true
		}
	}
	if len(typos) == 0 {
		return nil
	}
	return fmt.Errorf("--fields: the first row has no field %s%s (it has: %s); nothing was written",
		strings.Join(typos, ", "), meant(c.fields, lacks, have), strings.Join(have, ", "))
}

// meant is "; did you mean X?" for the names in lacks with a near miss in
// have, in the order of fields ("" when there is none).
func meant(fields []string, lacks map[string]bool, have []string) string {
	var s []string
	for _, f := range fields {
		if lacks[f] {
			if m := suggestField(f, have); m != "" {
				s = append(s, m)
			}
		}
	}
	if len(s) == 0 {
		return ""
	}
	return "; did you mean " + strings.Join(s, ", ") + "?"
}

// openRows opens a delivery file (stdin for "-") and returns its rows.
func (a *app) openRows(path, format string) (iter.Seq2[lendgraph.Row, error], func(), error) {
	var in io.Reader = a.stdin
	var file *os.File
	closeIn := func() {}
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, fmt.Errorf("input: %w", err)
		}
		file, in, closeIn = f, f, func() { _ = f.Close() }
	}
	br := bufio.NewReaderSize(in, 64<<10)
	if format == "auto" {
		head, _ := br.Peek(512)
		format = detectFormat(path, head)
	}
	if format != "parquet" {
		return lendgraph.DecodeRows[lendgraph.Row](br, lendgraph.Format(format)), closeIn, nil
	}
	// Parquet needs random access: stdin is copied to a temporary file.
	if file == nil {
		tmp, err := os.CreateTemp("", "lendgraph-rows-*.parquet")
		if err != nil {
			return nil, nil, err
		}
		closeIn = func() { _ = tmp.Close(); _ = os.Remove(tmp.Name()) }
		if _, err := io.Copy(tmp, br); err != nil {
			closeIn()
			return nil, nil, fmt.Errorf("input: %w", err)
		}
		file = tmp
	}
	fi, err := file.Stat()
	if err != nil {
		closeIn()
		return nil, nil, fmt.Errorf("input: %w", err)
	}
	return parquet.Decode[lendgraph.Row](file, fi.Size()), closeIn, nil
}

// detectFormat names a delivery file's format from its first bytes, then
// from its name; csv is the fallback.
func detectFormat(name string, head []byte) string {
	head = bytes.TrimPrefix(head, []byte("\xEF\xBB\xBF"))
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return "ndjson"
	case bytes.HasPrefix(head, []byte("PAR1")):
		return "parquet"
	}
	switch t := bytes.TrimLeft(head, " \t\r\n"); {
	case len(t) > 0 && t[0] == '[':
		return "json"
	case len(t) > 0 && t[0] == '{':
		return "ndjson"
	}
	name = strings.ToLower(strings.TrimSuffix(filepath.Base(name), ".gz"))
	switch filepath.Ext(name) {
	case ".ndjson", ".jsonl":
		return "ndjson"
	case ".json":
		return "json"
	case ".parquet":
		return "parquet"
	}
	return "csv"
}

// rowWriter writes untyped rows as ndjson, a json array or csv.
type rowWriter struct {
	to     string
	w      *bufio.Writer
	fields []string // the columns, in order; nil: every column, sorted
	named  bool     // the columns came from --fields
	check  *fieldCheck
	warn   func(string, ...any)
	n      int
	csv    *csv.Writer
	header map[string]bool
	empty  []string // the csv header when there are no rows and no --fields; nil: none
	warned map[string]bool
	buf    []byte
	cells  []string
}

func newRowWriter(to string, w *bufio.Writer, fields []string, warn func(string, ...any)) *rowWriter {
	return &rowWriter{to: to, w: w, fields: fields, named: fields != nil, warn: warn, check: newFieldCheck(fields)}
}

func (rw *rowWriter) write(row lendgraph.Row) error {
	if rw.n == 0 && rw.named {
		if err := rw.check.first(row); err != nil {
			return err
		}
	}
	defer func() { rw.n++ }()
	rw.check.see(row)
	if rw.to == "csv" {
		return rw.writeCSV(row)
	}
	b := rw.buf[:0]
	if rw.to == "json" {
		if rw.n == 0 {
			b = append(b, "[\n"...)
		} else {
			b = append(b, ",\n"...)
		}
	}
	b = appendObject(b, row, rw.fields)
	if rw.to == "ndjson" {
		b = append(b, '\n')
	}
	rw.buf = b
	_, err := rw.w.Write(b)
	return err
}

func (rw *rowWriter) writeCSV(row lendgraph.Row) error {
	if rw.csv == nil {
		rw.csv = csv.NewWriter(rw.w)
		if rw.fields == nil {
			rw.fields = row.Names()
		}
		rw.header = map[string]bool{}
		for _, f := range rw.fields {
			rw.header[f] = true
		}
		if err := rw.csv.Write(rw.fields); err != nil {
			return err
		}
	}
	rw.cells = rw.cells[:0]
	for _, f := range rw.fields {
		rw.cells = append(rw.cells, cellText(jsontext.Value(column(row, f))))
	}
	for name := range row.All() {
		if !rw.named && !rw.header[name] && !rw.warned[name] {
			if rw.warned == nil {
				rw.warned = map[string]bool{}
			}
			rw.warned[name] = true
			rw.warn("row %d has column %q, which is not in the csv header; it is left out (name it in --fields to keep it)", rw.n+1, name)
		}
	}
	return rw.csv.Write(rw.cells)
}

// close ends the output; it fails when a --fields name was in no row.
func (rw *rowWriter) close() error {
	if err := rw.end(); err != nil {
		return err
	}
	return rw.check.err()
}

func (rw *rowWriter) end() error {
	switch rw.to {
	case "json":
		if rw.n == 0 {
			_, err := rw.w.WriteString("[]\n")
			return err
		}
		_, err := rw.w.WriteString("\n]\n")
		return err
	case "csv":
		if rw.csv == nil {
			header := rw.fields
			if header == nil {
				header = rw.empty
			}
			if header == nil {
				return nil // no rows, and nothing tells the columns: no header
			}
			rw.csv = csv.NewWriter(rw.w)
			_ = rw.csv.Write(header)
		}
		rw.csv.Flush()
		return rw.csv.Error()
	}
	return nil
}

// appendObject appends row as one line of JSON: the named fields in order
// (those the row has), or every member in sorted order.
func appendObject(b []byte, row lendgraph.Row, fields []string) []byte {
	if fields == nil {
		fields = row.Names()
	}
	b = append(b, '{')
	first := true
	for _, f := range fields {
		v, ok := row.Get(f)
		if !ok {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b, _ = jsontext.AppendQuote(b, f)
		b = append(b, ':')
		b = appendCompact(b, jsontext.Value(v))
	}
	return append(b, '}')
}

// appendCompact appends v without insignificant whitespace: a row read from
// an indented json file stays on one line.
func appendCompact(b []byte, v jsontext.Value) []byte {
	if k := v.Kind(); k != '{' && k != '[' {
		return append(b, v...)
	}
	c := slices.Clone(v)
	if err := c.Compact(); err != nil {
		return append(b, v...)
	}
	return append(b, c...)
}

// cellText is a value as a csv cell: strings as their text, null (or a
// missing column) empty, nested values as compact JSON.
func cellText(v jsontext.Value) string {
	switch v.Kind() {
	case 0, 'n':
		return ""
	case '"':
		s, err := jsontext.AppendUnquote(nil, v)
		if err != nil {
			return string(v)
		}
		return string(s)
	}
	return string(appendCompact(nil, v))
}

// column is the JSON text of row's column called name; nil when the row
// has none.
func column(row lendgraph.Row, name string) []byte {
	v, _ := row.Get(name)
	return v
}
