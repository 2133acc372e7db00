package export

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// MissingValue is the directory value of the shard that holds the records
// without a value of its key (PlanOptions.IncludeMissing): Hive's name for
// a null partition, which DuckDB and Spark read back as NULL.
const MissingValue = "__HIVE_DEFAULT_PARTITION__"

// partFile is the name of a shard's file inside its directory.
const partFile = "part-00000"

// escapePathValue escapes a partition value the way Hive and Spark do
// (FileUtils.escapePathName): the characters that would break a path or
// the key=value syntax, and control characters, become %XX. DuckDB and
// Spark decode them on read.
func escapePathValue(s string) string {
	if s == "" {
		return MissingValue
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// valueText is a partition value as it appears in a directory name and in
// messages: strings as they are, numbers without exponent or needless
// fraction, booleans as true or false.
func valueText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		return valueText(float64(x))
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// checkField rejects a partition field that cannot name a Hive directory:
// empty, with '/', '=' or a control character, or starting with '_' or '.'
// (Spark and Hadoop skip such directories as hidden).
func checkField(f string) error {
	switch {
	case strings.TrimSpace(f) == "":
		return invalid("By", "a partition field is empty; name a field such as \"state\"")
	case strings.HasPrefix(f, "_") || strings.HasPrefix(f, "."):
		return invalid("By", "partition field %q starts with %q: Spark and Hadoop skip such directories as hidden", f, f[:1])
	case strings.ContainsAny(f, "/=\\") || strings.ContainsFunc(f, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return invalid("By", "partition field %q holds a character a directory name cannot (/, =, \\ or a control character)", f)
	}
	return nil
}

// extension is the file extension of a delivery format, as the reference
// lists them.
func extension(f lendgraph.Format) string {
	switch f {
	case lendgraph.FormatNDJSON:
		return ".ndjson.gz"
	case lendgraph.FormatJSON:
		return ".json"
	case lendgraph.FormatCSV:
		return ".csv"
	case lendgraph.FormatParquet:
		return ".parquet"
	}
	return "." + string(f)
}

// invalid is the SDK's argument error: nothing was sent.
func invalid(arg, format string, a ...any) error {
	return &lendgraph.InvalidArgumentError{Arg: arg, Problem: fmt.Sprintf(format, a...)}
}
