package lendgraph

import (
	"bytes"
	"fmt"
	"io"
	"iter"
	"reflect"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/lendgraph/lendgraph-go/internal/formats"
)

// Row is an untyped delivery row, for files whose schema is not known at
// compile time: every column as the raw JSON the SDK built for it. Numbers
// keep their exact text (integers above 2^53 included); decode a column
// with Row.Decode or read the raw value.
type Row = Fields

// DecodeOption tunes DecodeRows and DecodeParquet.
type DecodeOption func(*decodeConfig)

type decodeConfig struct {
	maxLine int
}

// WithMaxLineSize sets the longest ndjson line (one row) accepted; longer
// lines are an error naming the line. The default is 64 MiB.
func WithMaxLineSize(n int) DecodeOption { return func(c *decodeConfig) { c.maxLine = n } }

// DecodeRows decodes a delivery file in format f from r into rows of T,
// yielded in file order; for FormatNDJSON r is the .ndjson.gz file as
// delivered. Every format gives the same rows:
//
//   - ndjson: gzip (concatenated members too), lines of any length up to
//     the WithMaxLineSize limit, CRLF and a missing last newline tolerated.
//   - json: one array, decoded element by element, never read whole.
//   - csv: RFC 4180 with a header of the rows' JSON field names (a UTF-8
//     BOM is dropped); cells convert to the field types (empty cells leave
//     the zero value) and JSON-encoded nested fields decode into the nested
//     field. Columns the row type lacks land in its Extra fields: true,
//     false, numbers in canonical form and JSON objects or arrays as those
//     values, anything else as a string. Quotes are strict and a row with
//     a different number of fields is an error.
//   - parquet: use DecodeParquet, which needs random access (r is read into
//     memory here).
//
// A truncated or corrupt file yields every whole row before the damage and
// then an error naming the format and where (row, line or byte offset); an
// empty (0-byte) file is an error in every format: even a delivery of no
// rows has a gzip header, a csv header line, "[]" or a parquet footer.
//
// The sequence follows the package's iterator contract. Ranging it again
// reads r again from where the first range started when r is an io.Seeker
// (an *os.File, a *bytes.Reader); any other reader cannot be rewound, and
// a second range yields an error instead of rows. Two ranges at the same
// time are refused (the second yields an error): they would share r.
//
// Rows are decoded in parallel batches on GOMAXPROCS goroutines, one of
// which reads r. Stopping the loop (break, a panic in its body, an error)
// stops them all before the iterator returns, and waits for a Read of r
// in progress to return: DecodeRows cannot interrupt a Read it did not
// start. When r can block for long (a network body, a pipe), make its Read
// return before you stop: close r (from the loop body, before break, or
// from another goroutine), or cancel the request that feeds it.
// DeliveryJob.Rows does this for you.
func DecodeRows[T any](r io.Reader, f Format, opts ...DecodeOption) iter.Seq2[T, error] {
	if r == nil {
		return errSeq[T](errNilReader("r"))
	}
	if !slices.Contains(deliveryFormats, f) {
		return errSeq[T](invalidArg("Format", "%q is not a delivery format; use ndjson, json, csv or parquet", f))
	}
	return replayable(r, func(r io.Reader) iter.Seq2[T, error] { return decodeRows[T](r, f, opts...) })
}

// decodeRows is DecodeRows for one range over r, for callers that open a
// new stream for every range (DeliveryJob.Rows).
func decodeRows[T any](r io.Reader, f Format, opts ...DecodeOption) iter.Seq2[T, error] {
	var cfg decodeConfig
	for _, o := range opts {
		o(&cfg)
	}
	switch f {
	case FormatNDJSON:
		return formats.Stream(string(f), formats.NDJSON(r, cfg.maxLine), rowDecoder[T](), 0)
	case FormatJSON:
		return formats.Stream(string(f), formats.JSONArray(r, jsonTextOptions...), rowDecoder[T](), 0)
	case FormatCSV:
		return formats.Stream(string(f), formats.CSV(r, schemaOf[T]()), rowDecoder[T](), 0)
	case FormatParquet:
		return func(yield func(T, error) bool) {
			b, err := io.ReadAll(r)
			if err != nil {
				var zero T
				yield(zero, fmt.Errorf("parquet: reading the file: %w", err))
				return
			}
			for row, err := range DecodeParquet[T](bytes.NewReader(b), int64(len(b))) {
				if !yield(row, err) {
					return
				}
			}
		}
	}
	return errSeq[T](invalidArg("Format", "%q is not a delivery format; use ndjson, json, csv or parquet", f))
}

// DecodeParquet decodes a parquet delivery file of size bytes into rows of
// T, one row group at a time. Scalar columns keep their types (DECIMAL
// scaled exactly, DATE and TIMESTAMP as strings); JSON-encoded nested
// fields decode into the row's nested fields; fields missing from a file
// narrowed by `fields` stay zero; columns the row type lacks land in its
// Extra fields. A corrupt file is an error, never a panic.
//
// The sequence follows the package's iterator contract: r is read at
// offsets, never moved, so every range reads the whole file again, and
// ranges in several goroutines at once are independent (io.ReaderAt allows
// parallel reads).
func DecodeParquet[T any](r io.ReaderAt, size int64) iter.Seq2[T, error] {
	if r == nil {
		return errSeq[T](errNilReader("r"))
	}
	return formats.Stream("parquet", formats.Parquet(r, size, schemaOf[T]()), rowDecoder[T](), formats.ParquetInFlight)
}

// rowDecoder decodes one row's JSON object into T: a direct scan for plain
// struct rows (scalar fields set in place, unknown members kept as slices of
// one buffer per row), unmarshal for anything else or anything unusual.
func rowDecoder[T any]() func() *formats.RowDec[T] {
	return formats.RowDecoder[T](func(b []byte, v any) error { return unmarshal(b, v) }, plainRecords[reflect.TypeFor[T]()])
}

// plainRecords are the delivery row types whose unmarshal methods decode
// exactly like their fields (records_json.go), so the direct scan may
// bypass them.
var plainRecords = map[reflect.Type]bool{
	reflect.TypeFor[Agent](): true, reflect.TypeFor[Originator](): true, reflect.TypeFor[Company](): true,
	reflect.TypeFor[Loan](): true, reflect.TypeFor[Property](): true, reflect.TypeFor[Branch](): true,
	reflect.TypeFor[Fields](): true,
}

func schemaOf[T any]() formats.Schema { return formats.SchemaOf(reflect.TypeFor[T]()) }

var jsonTextOptions = []jsontext.Options{jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true)}
