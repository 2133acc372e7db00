package formats

import (
	"errors"
	"fmt"
	"strings"
)

// RowError is where and why a file could not be decoded. Package lendgraph
// gives it to users as lendgraph.RowError, a struct of the same fields
// (converted in the function SetSDKCodec registers), so the two must stay
// field for field the same.
type RowError struct {
	Format string // the file's format: "ndjson", "json", "csv", "parquet", ...
	Row    int64  // 1-based number of the row; 0: before the first row (header, empty file)
	Line   int64  // 1-based line of the file (ndjson, csv) where reading failed, 0 when not known
	Offset int64  // byte offset (of the decompressed stream for ndjson.gz), 0 when not known
	Column string // the column (csv, parquet), "" when not known
	Err    error  // what went wrong
}

// Error words the place and the cause:
// "lendgraph: csv file: row 12 (line 13, column "zip"): ...".
func (e *RowError) Error() string {
	if e == nil {
		return "lendgraph: a file could not be decoded"
	}
	var b strings.Builder
	b.WriteString("lendgraph: ")
	if e.Format != "" {
		b.WriteString(e.Format + " ")
	}
	b.WriteString("file")
	var where []string
	if e.Line > 0 {
		where = append(where, fmt.Sprintf("line %d", e.Line))
	}
	if e.Offset > 0 {
		where = append(where, fmt.Sprintf("byte %d", e.Offset))
	}
	if e.Column != "" {
		where = append(where, fmt.Sprintf("column %q", e.Column))
	}
	switch {
	case e.Row > 0:
		fmt.Fprintf(&b, ": row %d", e.Row)
		if len(where) > 0 {
			b.WriteString(" (" + strings.Join(where, ", ") + ")")
		}
	case len(where) > 0:
		b.WriteString(": " + strings.Join(where, ", "))
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	} else {
		b.WriteString(": could not be decoded")
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *RowError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// rowErr is an error at row (1-based; 0 before the first row). Stream
// fills in the format.
func rowErr(row int64, err error) *RowError { return &RowError{Row: row, Err: err} }

// atRow is err placed at row, unless it has a place already.
func atRow(row int64, err error) error {
	var re *RowError
	if errors.As(err, &re) {
		return err
	}
	return rowErr(row, err)
}

// finish is the error Stream yields for err in a file of format: a
// *RowError naming the format, converted to the SDK's exported type.
func finish(format string, err error) error {
	var re *RowError
	if !errors.As(err, &re) {
		re = rowErr(0, err)
	}
	if re.Format == "" {
		re.Format = format
	}
	if sdkCodec.rowError != nil {
		return sdkCodec.rowError(re)
	}
	return re
}
