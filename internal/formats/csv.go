package formats

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
)

// CSV reads RFC 4180 CSV whose header holds the rows' JSON member names
// (a UTF-8 BOM before it is dropped). Each record becomes one JSON object:
// cells convert by the kind schema gives their column (empty cells of typed
// fields are left out, so the field keeps its zero value); columns the row
// type does not know are inferred (see appendInferred). Quotes are strict:
// a bare or unterminated quote, or a row with a different number of
// fields, is an error naming the row.
func CSV(r io.Reader, schema Schema) Producer {
	return func(e *emitter) error {
		br := bufio.NewReaderSize(r, 256<<10)
		if bom, _ := br.Peek(3); len(bom) == 3 && bom[0] == 0xEF && bom[1] == 0xBB && bom[2] == 0xBF {
			_, _ = br.Discard(3)
		}
		cr := csv.NewReader(br)
		cr.ReuseRecord = true
		header, err := cr.Read()
		if err == io.EOF {
			return nil // an empty file has no rows
		}
		if err != nil {
			return fmt.Errorf("csv: reading the header: %w", err)
		}
		header = slices.Clone(header) // ReuseRecord reuses its array
		names := make([][]byte, len(header))
		kinds := make([]Kind, len(header))
		skip := make([]bool, len(header))
		seen := map[string]bool{}
		for i, h := range header {
			if seen[h] {
				return fmt.Errorf("csv: the header names column %q twice", h)
			}
			seen[h] = true
			names[i], _ = jsontext.AppendQuote(nil, h)
			names[i] = append(names[i], ':')
			k, known := schema[h]
			kinds[i], skip[i] = k, !known && !schema.keepsUnknown() || h == ""
		}
		for {
			rec, err := cr.Read()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				var pe *csv.ParseError
				if errors.As(err, &pe) {
					return fmt.Errorf("csv: row %d (line %d, column %d): %w", e.next, pe.StartLine, pe.Column, pe.Err)
				}
				return fmt.Errorf("csv: row %d: %w", e.next, err)
			}
			buf := append(e.begin(), '{')
			first := true
			for i, cell := range rec {
				k := kinds[i]
				if skip[i] || cell == "" && k != Unknown && k != String {
					continue
				}
				mark := len(buf)
				if !first {
					buf = append(buf, ',')
				}
				buf = append(buf, names[i]...)
				var ok bool
				if buf, ok = appendText(buf, k, cell); !ok {
					e.cur.buf = buf[:mark]
					return fmt.Errorf("csv: row %d, column %q: %q is not a valid %s", e.next, header[i], cell, kindName[k])
				}
				first = false
			}
			if !e.end(append(buf, '}')) {
				return errStopped
			}
		}
	}
}

var kindName = map[Kind]string{String: "string", Int: "integer", Float: "number", Bool: "boolean", Nested: "JSON value"}
