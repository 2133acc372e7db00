package formats

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
)

// CSV reads RFC 4180 CSV whose header holds the rows' JSON member names
// (a UTF-8 BOM before it is dropped). Each record becomes one JSON object:
// cells convert by the kind schema gives their column (empty cells of typed
// fields are left out, so the field keeps its zero value); cells of
// columns the row type does not know are JSON objects and arrays when they
// hold one, booleans in a boolean column, and otherwise their text (see
// csvColumns.appendUnknown and sniff). Quotes are strict:
// a bare or unterminated quote, or a row with a different number of
// fields, is an error naming the row.
//
// The producer only finds where records end (a newline outside quotes);
// workers parse chunks of records with encoding/csv and build the JSON, so
// parsing runs on every core. A malformed quote makes the split wrong only
// from that record on, and encoding/csv reports that record.
func CSV(r io.Reader, schema Schema) Producer {
	return func(e *emitter) error {
		br := bufio.NewReaderSize(r, 256<<10)
		if bom, _ := br.Peek(3); len(bom) == 3 && bom[0] == 0xEF && bom[1] == 0xBB && bom[2] == 0xBF {
			_, _ = br.Discard(3)
		}
		sp := &csvSplitter{br: br, line: 1}
		head, _, err := sp.record(nil)
		if len(head) == 0 && err == io.EOF {
			// Even a delivery of no rows has its header line.
			return rowErr(0, errors.New("the file is empty: no header line"))
		}
		if err != nil && err != io.EOF {
			return &RowError{Line: 1, Err: fmt.Errorf("reading the header: %w", err)}
		}
		header, herr := csv.NewReader(bytes.NewReader(head)).Read()
		if herr != nil {
			return &RowError{Line: 1, Err: fmt.Errorf("reading the header: %w", herr)}
		}
		cols, err := newCSVColumns(header, schema)
		if err != nil {
			return err
		}
		for first := true; err == nil; {
			raw := e.pool.Get().(*Batch)
			raw.buf, raw.ends, raw.starts = raw.buf[:0], raw.ends[:0], raw.starts[:0]
			n := 0
			var rerr error
			for err == nil && n < batchRows && len(raw.buf) < batchBytes {
				before := len(raw.buf)
				var line int
				if raw.buf, line, err = sp.record(raw.buf); err != nil && err != io.EOF {
					raw.buf, rerr = raw.buf[:before], err // the records before it are whole
				} else if len(raw.buf) > before {
					n++
					raw.ends, raw.starts = append(raw.ends, len(raw.buf)), append(raw.starts, line)
				}
			}
			if first && n > 0 {
				cols.sniff(raw)
			}
			first = false
			if n > 0 && !e.later(cols.chunk(raw, e.pool), int64(n), 4) {
				return errStopped
			}
			if rerr != nil {
				return &RowError{Row: e.next, Line: int64(sp.line), Err: rerr}
			}
			if n == 0 {
				e.pool.Put(raw)
			}
		}
		return nil
	}
}

// csvSplitter cuts a csv stream into records: lines are joined while a
// quoted field is open (an odd number of quotes so far); blank lines
// between records are skipped, as encoding/csv does.
type csvSplitter struct {
	br   *bufio.Reader
	line int // number of the next line
}

// maxRecord bounds one csv record (a quoted cell may hold newlines).
const maxRecord = DefaultMaxLine

// record appends the next record (with its line end) to dst and returns
// the number of its first line; it appends nothing at the end of the
// stream (io.EOF).
func (s *csvSplitter) record(dst []byte) (_ []byte, line int, _ error) {
	start, quoted := len(dst), false
	for {
		if len(dst) == start { // a record's first line (blank lines are skipped)
			line = s.line
		}
		l, err := s.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			err = nil
		} else if len(l) > 0 && l[len(l)-1] == '\n' {
			s.line++
		}
		if !quoted && len(dst) == start && (len(l) == 1 && l[0] == '\n' || len(l) == 2 && l[0] == '\r' && l[1] == '\n') {
			if err != nil {
				return dst, line, err
			}
			continue // a blank line
		}
		dst = append(dst, l...)
		if bytes.Count(l, []byte{'"'})%2 == 1 {
			quoted = !quoted
		}
		if len(dst)-start > maxRecord {
			return dst[:start], line, fmt.Errorf("record longer than %d bytes", maxRecord)
		}
		if err != nil || !quoted && len(dst) > start && dst[len(dst)-1] == '\n' {
			return dst, line, err
		}
	}
}

type csvColumns struct {
	slabs  sync.Pool // *[]string of records' fields
	header []string
	names  [][]byte
	kinds  []Kind
	skip   []bool
	bools  []bool // boolean columns among those the row type does not declare (see sniff)
}

func newCSVColumns(header []string, schema Schema) (*csvColumns, error) {
	c := &csvColumns{header: slices.Clone(header), names: make([][]byte, len(header)),
		kinds: make([]Kind, len(header)), skip: make([]bool, len(header)), bools: make([]bool, len(header))}
	seen := map[string]bool{}
	for i, h := range header {
		if seen[h] {
			return nil, &RowError{Line: 1, Column: h, Err: errors.New("the header names the column twice")}
		}
		seen[h] = true
		c.names[i], _ = jsontext.AppendQuote(nil, h)
		c.names[i] = append(c.names[i], ':')
		k, known := schema.Lookup(h)
		c.kinds[i], c.skip[i] = k, !known && !schema.keepsUnknown() || h == ""
	}
	return c, nil
}

// sniff decides, from the file's first batch of records (raw, up to
// batchRows records or batchBytes), which columns the row type does not declare are
// boolean: those with a non-empty cell and whose every non-empty cell is
// true or false in any case (BoolWord). It runs on the producer before
// the first batch goes to a worker, so every row of the file sees the same
// decision. A stream cannot see a column's later cells before it yields
// the first rows, so the decision is the sample's, as DuckDB's sniffer
// decides a column's type from a sample of the file (20,480 rows; the
// start of a stream that cannot seek); a later cell of a boolean column
// that is not a boolean keeps its text. A record that does not parse is
// left out here: its worker reports it.
func (c *csvColumns) sniff(raw *Batch) {
	w, open := len(c.header), 0
	for i, k := range c.kinds {
		c.bools[i] = k == Unknown && !c.skip[i]
		if c.bools[i] {
			open++
		}
	}
	if open == 0 {
		return
	}
	seen := make([]bool, w)
	out := make([]string, 0, w)
	var sc csvScratch
	start := 0
	for _, end := range raw.ends {
		b := raw.buf[start:end]
		start = end
		rec, ok := splitCSV(b, out[:0:w], c.skip, &sc)
		if !ok {
			cr := csv.NewReader(bytes.NewReader(b))
			cr.FieldsPerRecord = w
			var err error
			if rec, err = cr.Read(); err != nil {
				continue
			}
		}
		for i, cell := range rec {
			if !c.bools[i] || cell == "" {
				continue
			}
			if _, ok := BoolWord(cell); ok {
				seen[i] = true
			} else {
				c.bools[i] = false
			}
		}
	}
	for i := range c.bools {
		c.bools[i] = c.bools[i] && seen[i]
	}
}

// appendUnknown appends the JSON of cell i of a column the row type does
// not declare. csv carries no types, so the text decides, as for a
// parquet string column: an empty cell is null (csv has no other way to
// write one: DuckDB, polars and pandas read it as null, and parquet holds
// a null); a JSON object or array is that value (nested fields,
// JSON-encoded as the API's csv and parquet files carry them); a cell of
// a boolean column (sniff) is true or false; anything else is a JSON
// string holding exactly the text ("02134" stays "02134", "42" stays
// "42"), which Fields.Decode converts to the Go type asked for.
func (c *csvColumns) appendUnknown(dst []byte, i int, cell string) []byte {
	if cell == "" {
		return append(dst, "null"...)
	}
	if c.bools[i] {
		if b, ok := BoolWord(cell); ok {
			return strconv.AppendBool(dst, b)
		}
	}
	if isJSONComposite(cell) {
		return append(dst, cell...)
	}
	return appendCell(dst, cell)
}

// chunk parses the records of raw (ends and first lines in raw.ends and
// raw.starts) on a worker. A record in the common form is split here;
// anything else (a stray quote, a carriage return in a quoted field, a
// wrong number of fields) is parsed by encoding/csv, which also words the
// error.
func (c *csvColumns) chunk(raw *Batch, pool interface{ Put(any) }) Producer {
	return func(e *emitter) error {
		defer pool.Put(raw)
		w := len(c.header)
		// The records' fields, reused: their strings are the records'
		// own, and every row is decoded before the chunk returns.
		fields, _ := c.slabs.Get().(*[]string)
		if fields == nil || cap(*fields) < w*len(raw.ends) {
			fields = new([]string)
			*fields = make([]string, w*len(raw.ends))
		}
		defer func() {
			e.flush() // the rows before an error too
			clear(*fields)
			c.slabs.Put(fields)
		}()
		start := 0
		var sc csvScratch
		for k, end := range raw.ends {
			b := raw.buf[start:end]
			start = end
			rec, ok := splitCSV(b, (*fields)[k*w:k*w:(k+1)*w], c.skip, &sc)
			if !ok {
				cr := csv.NewReader(bytes.NewReader(b))
				cr.FieldsPerRecord = w
				var err error
				if rec, err = cr.Read(); err != nil {
					var pe *csv.ParseError
					if errors.As(err, &pe) {
						return &RowError{Row: e.next, Line: int64(raw.starts[k] + pe.StartLine - 1), Err: fmt.Errorf("column %d: %w", pe.Column, pe.Err)}
					}
					return rowErr(e.next, err)
				}
			}
			if !e.record(c, rec) {
				return errStopped
			}
		}
		if !e.flush() {
			return errStopped
		}
		return nil
	}
}

// splitCSV splits one record (with its line end) into out, as
// encoding/csv would, except that fields marked in skip are left empty;
// false means it is not in the plain form handled here or does not have
// cap(out) fields. The fields share one new string (quoted fields with
// doubled quotes unescaped into its tail); sc is scratch space.
func splitCSV(b []byte, out []string, skip []bool, sc *csvScratch) ([]string, bool) {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n > 1 && b[n-2] == '\r' {
			b = b[:n-2]
		}
	}
	// Field k is text[spans[2k]:spans[2k+1]] of text = b + esc.
	spans, esc := sc.spans[:0], sc.esc[:0]
	defer func() { sc.spans, sc.esc = spans, esc }()
	nf := cap(out) - len(out)
	for i := 0; ; {
		if len(spans) == 2*nf {
			return out, false
		}
		skipped := skip[len(out)+len(spans)/2]
		if i < len(b) && b[i] == '"' {
			j, escaped := i+1, false
			for {
				k := bytes.IndexByte(b[j:], '"')
				if k < 0 {
					return out, false
				}
				j += k
				if j+1 < len(b) && b[j+1] == '"' {
					j, escaped = j+2, true
					continue
				}
				break
			}
			f := b[i+1 : j]
			if bytes.IndexByte(f, '\r') >= 0 {
				return out, false
			}
			switch {
			case skipped:
				spans = append(spans, 0, 0)
			case escaped:
				a := len(esc)
				for {
					k := bytes.IndexByte(f, '"')
					if k < 0 {
						esc = append(esc, f...)
						break
					}
					esc = append(esc, f[:k+1]...)
					f = f[k+2:]
				}
				spans = append(spans, len(b)+a, len(b)+len(esc))
			default:
				spans = append(spans, i+1, j)
			}
			if j+1 == len(b) {
				break
			}
			if b[j+1] != ',' {
				return out, false
			}
			i = j + 2
			continue
		}
		j := i
		for j < len(b) && csvPlain[b[j]] {
			j++
		}
		if j < len(b) && b[j] != ',' {
			return out, false // a quote, CR or LF in an unquoted field
		}
		if skipped {
			spans = append(spans, 0, 0)
		} else {
			spans = append(spans, i, j)
		}
		if j == len(b) {
			break
		}
		i = j + 1
	}
	if len(spans) != 2*nf {
		return out, false
	}
	var text string
	if len(esc) == 0 {
		text = string(b)
	} else {
		buf := make([]byte, len(b)+len(esc))
		copy(buf[copy(buf, b):], esc)
		text = unsafe.String(unsafe.SliceData(buf), len(buf)) // never written again
	}
	for k := 0; k < len(spans); k += 2 {
		if spans[k] == spans[k+1] {
			out = append(out, "")
		} else {
			out = append(out, text[spans[k]:spans[k+1]])
		}
	}
	return out, true
}

// csvScratch is a worker's scratch space for splitCSV.
type csvScratch struct {
	spans []int
	esc   []byte
}

// csvPlain marks the bytes that may appear in an unquoted field.
var csvPlain = func() (t [256]bool) {
	for i := range t {
		t[i] = i != ',' && i != '"' && i != '\r' && i != '\n'
	}
	return t
}()

// appendJSON appends the JSON object a record converts to; bad is the
// index of a cell that cannot convert to its field's kind, or -1.
func (c *csvColumns) appendJSON(buf []byte, rec []string, lenient bool) (out []byte, bad int) {
	buf = append(buf, '{')
	first := true
	for i, cell := range rec {
		k := c.kinds[i]
		if c.skip[i] || cell == "" && k != Unknown {
			continue // an empty cell is a field left as it is: "", 0, nil
		}
		if !first {
			buf = append(buf, ',')
		}
		buf = append(buf, c.names[i]...)
		if k == Unknown {
			buf = c.appendUnknown(buf, i, cell)
		} else {
			var ok bool
			if buf, ok = appendText(buf, k, cell); !ok {
				if !lenient {
					return buf, i
				}
				// Lenient: the cell goes on as text, for the lenient decoder to
				// set aside on the record.
				buf, _ = appendText(buf, String, cell)
			}
		}
		first = false
	}
	return append(buf, '}'), -1
}

var kindName = map[Kind]string{String: "string", Int: "integer", Float: "number", Bool: "boolean", Nested: "JSON value"}
