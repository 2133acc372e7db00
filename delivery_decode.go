package lendgraph

import (
	"io"
	"iter"
	"reflect"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/lendgraph/lendgraph-go/internal/formats"
)

// Row is an untyped delivery row, for files whose schema is not known at
// compile time: every column as the raw JSON the SDK built for it, kept
// as one JSON object and decoded only when read. Numbers keep their exact
// text (integers above 2^53 included); decode a column with Row.Decode or
// read its JSON text with Row.Get.
type Row = Fields

// DecodeRows decodes a delivery file in format f from r into rows of T,
// yielded in file order; for FormatNDJSON r is the .ndjson.gz file as
// delivered. A member (or csv column, or parquet column) sets the field of
// T it names: by the field's json tag, else by the field's name, exactly,
// else up to case and '_' or '-' (an untagged FullName takes "fullName",
// as encoding/json and Fields.Decode match it). Every format gives the
// same rows:
//
//   - ndjson: gzip (concatenated members too), lines of any length up to
//     the WithMaxLineSize limit, CRLF and a missing last newline tolerated.
//   - json: one array (a UTF-8 BOM before it dropped), decoded element by
//     element, never read whole.
//   - csv: RFC 4180 with a header of the rows' JSON field names (a UTF-8
//     BOM is dropped); cells convert to the field types (an empty cell
//     leaves the zero value: a pointer stays nil, as a null does in the
//     other formats) and JSON-encoded nested fields decode into the nested
//     field. csv carries no types, so a cell of a column the row type
//     lacks lands in its Extra fields by its text: a JSON object or array
//     as that value (as in the other formats), an empty cell as null, a
//     cell of a boolean column as true or false, anything else as a JSON
//     string holding exactly the cell's text ("02134" stays "02134", "42"
//     stays "42"), which Fields.Decode converts to the Go type asked for.
//     A column is boolean when its every non-empty cell in the first
//     batch (512 records, fewer when they pass 256 KiB) is true or false in any case ("True" as pandas writes it,
//     "TRUE"), as DuckDB's and polars' csv readers infer it; a later cell
//     that is not keeps its text. A bool field takes every spelling
//     strconv.ParseBool takes and true or false in any case. Quotes are
//     strict and a row with a different number of fields is an error.
//   - parquet: not here; the parquet package of this module
//     (github.com/lendgraph/lendgraph-go/parquet, parquet.Decode) reads it,
//     so that programs which never read parquet do not link a parquet
//     library. FormatParquet yields an *InvalidArgumentError saying so.
//
// A truncated or corrupt file yields every whole row before the damage and
// then an error naming the format and where (row, line or byte offset); an
// empty (0-byte) file is an error in every format: even a delivery of no
// rows has a gzip header, a csv header line, "[]" or a parquet footer.
// Only csv has no end to check: a csv file cut between two rows, or where
// what is left of the last row is a whole row (a cut between the two
// quotes of a doubled quote closes its cell), reads as a shorter file; a
// cut anywhere else is an error. DeliveryJob.Rows
// checks the bytes it receives against the size the job's status record
// declares (else the storage host's Content-Length), so a delivery cut in
// transit is an error in every format.
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
//
// Its options are WithLenientDecoding and WithMaxLineSize; others are
// refused (an *InvalidArgumentError yielded).
func DecodeRows[T any](r io.Reader, f Format, opts ...Option) iter.Seq2[T, error] {
	if r == nil {
		return errSeq[T](errNilReader("r"))
	}
	if !slices.Contains(deliveryFormats, f) {
		return errSeq[T](invalidArg("Format", "%q is not a delivery format; use ndjson, json, csv or parquet", f))
	}
	cfg := config{call: defaultCallConfig()}
	err := cfg.apply(opts)
	if err == nil {
		err = cfg.check(scopeDecode, "DecodeRows")
	}
	if err != nil {
		return errSeq[T](err)
	}
	return replayable(r, func(r io.Reader) iter.Seq2[T, error] { return decodeRows[T](r, f, &cfg.call) })
}

// decodeRows is DecodeRows for one range over r, for callers that open a
// new stream for every range (DeliveryJob.Rows), with a call's settings.
func decodeRows[T any](r io.Reader, f Format, cfg *callConfig) iter.Seq2[T, error] {
	dec := rowDecoder[T]()
	if cfg.lenient {
		dec = formats.LenientRowDecoder[T](func(b []byte, v any) error { return unshapeErr(jsonv2.Unmarshal(b, shaped(v), lenientRowOptions)) },
			plainRecords[reflect.TypeFor[T]()])
	}
	switch f {
	case FormatNDJSON:
		return formats.Stream(string(f), formats.NDJSON(r, cfg.maxLine), dec, 0)
	case FormatJSON:
		return formats.Stream(string(f), formats.JSONArray(r, cfg.maxLine), dec, 0)
	case FormatCSV:
		return formats.Stream(string(f), formats.CSV(r, schemaOf[T]()), dec, 0)
	case FormatParquet:
		return errSeq[T](errParquet("Format", "parquet.Decode(readerAt, size)"))
	}
	return errSeq[T](invalidArg("Format", "%q is not a delivery format; use ndjson, json, csv or parquet", f))
}

// errParquet is the error of a parquet file given to the root package,
// which does not link a parquet library: use names the call to use.
func errParquet(arg, use string) error {
	return invalidArg(arg, "parquet files are read by the package github.com/lendgraph/lendgraph-go/parquet: use %s from it", use)
}

// rowDecoder decodes one row's JSON object into T: a direct scan for plain
// struct rows (scalar and nested fields set in place, unknown members kept
// as slices of one buffer per row), unmarshal for anything else or
// anything unusual.
func rowDecoder[T any]() func() *formats.RowDec[T] { return formats.SDKRowDecoder[T]() }

// The SDK's parquet package decodes rows as this package does: the same
// JSON rules and the same trusted record types.
func init() {
	formats.SetSDKCodec(func(b []byte, v any) error { return unshapeErr(jsonv2.Unmarshal(b, shaped(v), decodeFieldOptions)) },
		func(t reflect.Type) bool { return plainRecords[t] },
		func(e *formats.RowError) error { return (*RowError)(e) }, fieldsType)
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
