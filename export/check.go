package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// checkRow is what a landing decodes of a row: its id, and the other
// columns (the partition values are among them).
type checkRow struct {
	ID    string           `json:"id"`
	Extra lendgraph.Fields `json:",unknown"`
}

// errNoID is a row without an id: the duplicate check cannot work.
var errNoID = errors.New("a row has no id (the duplicate check needs the id column; keep \"id\" in Fields)")

// countStream decodes a file of a streamed format (not parquet) as it is
// read, and counts its rows, giving every row to sink when set.
func countStream(ctx context.Context, r io.Reader, format lendgraph.Format, sink func(*checkRow) error) (int64, error) {
	return countRows(ctx, lendgraph.DecodeRows[checkRow](bufio.NewReaderSize(r, 256<<10), format), sink)
}

// countRows counts decoded rows, giving every row to sink when set.
func countRows(ctx context.Context, rows iter.Seq2[checkRow, error], sink func(*checkRow) error) (int64, error) {
	var n int64
	for row, err := range rows {
		if err != nil {
			return n, err
		}
		n++
		if n%4096 == 0 && ctx.Err() != nil {
			return n, ctx.Err()
		}
		if sink != nil {
			if row.ID == "" {
				return n, errNoID
			}
			if err := sink(&row); err != nil {
				return n, fmt.Errorf("row %d (id %s): %w", n, row.ID, err)
			}
		}
	}
	return n, nil
}

// partitionError is a landed row whose partition values are not its
// shard's: the shard's request was not the plan's, or the service did not
// apply it. Landing the file again would land the same rows: it is not
// retried.
type partitionError struct {
	field, got, want string
	missing          bool
}

func (e *partitionError) Error() string {
	got := e.got
	if got == "" {
		got = "no value"
	}
	if e.missing {
		return fmt.Sprintf("its %s is %s, a value of another shard, but the shard holds the rows with no value of %s listed: the file is not this shard's; the plan or the delivery does not match, so nothing of it is landed",
			e.field, got, e.field)
	}
	return fmt.Sprintf("its %s is %s, but the shard holds %s=%s only: the file is not this shard's; the plan or the delivery does not match, so nothing of it is landed",
		e.field, got, e.field, e.want)
}

// keyCheck checks the partition values of a shard's rows against its keys.
type keyCheck struct {
	keys []Key
	// others are, for a Missing key, the values of that field the plan's
	// other shards under the same parent hold: a row of the Missing shard
	// must hold none of them.
	others []map[string]bool
}

// keyCheckOf is the check of shard sh's rows.
func keyCheckOf(p *Plan, sh *Shard) *keyCheck {
	k := &keyCheck{keys: sh.Keys, others: make([]map[string]bool, len(sh.Keys))}
	for i, key := range sh.Keys {
		if !key.Missing {
			continue
		}
		k.others[i] = map[string]bool{}
		for _, o := range p.Shards {
			if len(o.Keys) <= i || o.Keys[i].Missing || !sameParent(o.Keys, sh.Keys, i) {
				continue
			}
			k.others[i][valueText(o.Keys[i].Value)] = true
		}
	}
	return k
}

// sameParent reports whether two shards' first n keys are the same.
func sameParent(a, b []Key, n int) bool {
	for j := range n {
		if a[j].Field != b[j].Field || a[j].Missing != b[j].Missing || valueText(a[j].Value) != valueText(b[j].Value) {
			return false
		}
	}
	return true
}

// check reports a row whose partition values are not the shard's.
func (k *keyCheck) check(row *checkRow) error {
	for i, key := range k.keys {
		var raw json.RawMessage
		if key.Field == "id" {
			raw, _ = json.Marshal(row.ID)
		} else {
			raw, _ = row.Extra.Get(key.Field)
		}
		got, has := rawText(raw)
		switch {
		case key.Missing:
			if has && k.others[i][got] {
				return &partitionError{field: key.Field, got: got, missing: true}
			}
		case !has || !sameValue(got, valueText(key.Value)):
			return &partitionError{field: key.Field, got: got, want: valueText(key.Value)}
		}
	}
	return nil
}

// rawText is a column's value as text, as valueText writes a partition
// value; false when the row has none (no column, null, or an empty string).
func rawText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return string(raw), true
		}
		return s, s != ""
	}
	return string(raw), true
}

// sameValue compares a row's value with a partition value as text, and as
// numbers when both are (csv carries no types: "42" and 42 are one value).
func sameValue(got, want string) bool {
	if got == want {
		return true
	}
	a, err1 := strconv.ParseFloat(got, 64)
	b, err2 := strconv.ParseFloat(want, 64)
	return err1 == nil && err2 == nil && a == b
}
