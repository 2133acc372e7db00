// Package pqrows decodes parquet delivery files into typed rows on the
// stream of internal/formats. It is the only package of the SDK that
// imports parquet-go, so that programs which never read parquet do not
// link it.
package pqrows

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/parquet-go/parquet-go"

	"github.com/lendgraph/lendgraph-go/internal/formats"
)

// Decode yields the rows of the parquet file r (size bytes) as T, one row
// group at a time, row groups decoded in parallel on the stream's workers
// (newDecode makes one row decoder for each). The file is opened, and its
// footer checked, before any row: a corrupt file is an error, never a
// panic.
//
// Every column is a field of the row: scalar columns keep their types
// (DECIMAL scaled exactly, DATE and TIMESTAMP as strings, UUID formatted);
// a string column holding a JSON object or array (the API's JSON-encoded
// nested fields) decodes into the row's nested field; native nested
// columns (groups, LIST, MAP) decode into nested structs, slices and maps.
// Values are set in the row's fields directly; a row whose values do not
// fit its fields as plainly as that is decoded from its JSON instead,
// which also words the error. Columns the row type lacks are not read,
// unless it keeps unknown members.
//
// landing says that r is a file still being written in file order (a
// download: a read of bytes not yet written waits for them). Decode then
// reads nothing ahead of the row group it decodes, so that each row group
// is decoded as soon as it has landed: the file is opened from its footer
// alone (see bigColumns).
func Decode[T any](r io.ReaderAt, size int64, newDecode func() *formats.RowDec[T], landing bool) iter.Seq2[T, error] {
	schema := formats.SchemaOf(reflect.TypeFor[T]())
	return formats.Stream("parquet", producer(r, size, landing, schema, newDecode), newDecode, InFlight)
}

// InFlight bounds the row groups queued behind the one being yielded: with
// the one a worker decodes ahead, at most three row groups of rows exist
// at once.
const InFlight = 1

// checkFooter refuses a file whose footer length (its last 8 bytes: the
// length, then "PAR1") is more than the file holds: parquet-go allocates
// the length it reads before reading, so 1 KB of bad bytes could cost 4 GB.
func checkFooter(r io.ReaderAt, size int64) error {
	if size < 12 {
		return fmt.Errorf("%d bytes is too short: a parquet file has a 4-byte header and an 8-byte footer trailer", size)
	}
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return fmt.Errorf("reading the footer trailer: %w", err)
	}
	if n := int64(binary.LittleEndian.Uint32(tail[:4])); n > size-12 {
		return fmt.Errorf("the footer is said to be %d bytes long, in a file of %d bytes", n, size)
	}
	return nil
}

// maxAhead bounds the batches a worker decodes ahead of the reader.
const maxAhead = 16

func producer[T any](r io.ReaderAt, size int64, landing bool, schema formats.Schema, newDecode func() *formats.RowDec[T]) formats.Producer {
	return func(e *formats.Emitter) error {
		if size == 0 {
			return &formats.RowError{Err: errors.New("the file is empty (0 bytes): a parquet file has at least its header and footer")}
		}
		if err := checkFooter(r, size); err != nil {
			return &formats.RowError{Err: fmt.Errorf("not a readable parquet file: %w", err)}
		}
		opts := []parquet.FileOption{parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true)}
		f, err := parquet.OpenFile(r, size, opts...)
		if err != nil {
			return &formats.RowError{Err: fmt.Errorf("not a readable parquet file: %w", err)}
		}
		if vf := openInflated(r, size, landing, f, opts); vf != nil {
			f = vf // pages decompressed by the view (inflate.go)
		}
		cols := newColumns(f.Schema(), schema)
		groups := f.RowGroups()
		if len(groups) == 0 {
			return nil
		}
		var keep []int // the leaf columns to read: at least one, to count rows
		for c := range cols.leaves {
			if !cols.cols[cols.byLeaf[c]].skip {
				keep = append(keep, c)
			}
		}
		if len(keep) == 0 && cols.leaves > 0 {
			keep = append(keep, cols.leaves-1)
		}
		workers := max(runtime.GOMAXPROCS(0), 1)
		// Each row group is read by up to `ways` goroutines, each reading
		// some of its columns into the same rows; as many row groups at
		// once as leave no core idle. A row group's pages are then in
		// memory once, and a file of one row group is decoded on every
		// core.
		ways := min(workers, maxWays)
		if newDecode().Setter() == nil {
			ways = 1 // whole rows from JSON, a row group on each worker
		}
		// Row group g starts when g-at finished: in file order, as the
		// rows are yielded (a group waiting for the reader never blocks
		// one before it).
		at := max(workers/ways, 1)
		var done []chan struct{}
		meta := f.Metadata()
		for g, rg := range groups {
			var sizes []int64
			if g < len(meta.RowGroups) && len(meta.RowGroups[g].Columns) == cols.leaves {
				for _, c := range meta.RowGroups[g].Columns {
					sizes = append(sizes, c.MetaData.TotalUncompressedSize)
				}
			}
			parts := split(cols, schema, keep, sizes, ways)
			var after chan struct{}
			if g >= at {
				after = done[g-at]
			}
			finished := make(chan struct{})
			done = append(done, finished)
			// Every row group handed to a worker runs (its rows go nowhere
			// once the reader stopped), so each waits only for one that
			// was handed out before it.
			run := func(e *formats.Emitter) error {
				defer close(finished)
				if after != nil {
					<-after
				}
				return readRowGroup(rg, g, cols, parts, newDecode, e)
			}
			// A worker decoding ahead may buffer (workers-1)/workers of a
			// row group (enough to keep every worker busy), at most
			// maxAhead batches (to bound memory for wide rows).
			rows, w := rg.NumRows(), int64(workers)
			if !e.Later(run, rows, int(min((rows/formats.BatchRows+1)*(w-1)/w, maxAhead))+1) {
				return formats.ErrStopped
			}
		}
		return nil
	}
}

// aheadBytes bounds the rows (their structs) that wait between two stages
// reading one row group (more kept the many-group file's heap above
// 64 MiB for no gain; see BENCHMARKS.md).
const aheadBytes = 2 << 20

// maxWays bounds the goroutines that read one row group.
const maxWays = 4

// split divides the leaf columns to read (keep, in file order) into at
// most ways runs of adjacent columns of about the same cost, a top-level
// column's leaves in one run, the last columns first: readRowGroup's
// pipeline starts with the last part. A column costs its uncompressed
// size (sizes, by leaf; nil when unknown), twice that when the row type
// keeps it as an unknown member: its value is written as JSON and stored
// in the row's map, not set in a field. (Keeping every unknown member in
// one part, so that one goroutine made each row's map, left that
// goroutine the most of the work: the benchmark's Agent keeps 12 of its
// file's 17 columns so. Spread by their cost, it decoded in about 0.8 of
// the time; weighing them once or three times did worse than twice.)
// Adjacent columns let a row group read while its bytes land (Rows) start
// on the columns that landed first: the first stage reads the first
// columns ahead of the others, and when the last byte lands, what is left
// is the last columns' share.
func split(cols *columns, schema formats.Schema, keep []int, sizes []int64, ways int) [][]int {
	type top struct {
		col    int
		weight int64 // 2 for an unknown member, else 1
		leaves []int
		cost   int64
	}
	var tops []*top
	var total int64
	for _, c := range keep {
		ci := cols.byLeaf[c]
		if len(tops) == 0 || tops[len(tops)-1].col != ci {
			t := &top{col: ci, weight: 1}
			if _, known := schema.Lookup(cols.cols[ci].name); !known {
				t.weight = 2
			}
			tops = append(tops, t)
		}
		t := tops[len(tops)-1]
		t.leaves = append(t.leaves, c)
		cost := int64(1)
		if sizes != nil {
			cost += sizes[c]
		}
		t.cost += cost * t.weight
		total += cost * t.weight
	}
	ways = min(ways, len(tops))
	if ways <= 1 {
		return [][]int{keep}
	}
	var parts [][]int
	var cur []int
	var acc int64 // the cost of the parts so far and cur
	for i, t := range tops {
		// Cut before t when that leaves cur nearer its share than t
		// would, and each part to come a column.
		target := total * int64(len(parts)+1) / int64(ways)
		if len(cur) > 0 && len(parts) < ways-1 && (acc+t.cost-target > target-acc || len(tops)-i == ways-1-len(parts)) {
			parts, cur = append(parts, cur), nil
		}
		cur = append(cur, t.leaves...)
		acc += t.cost
	}
	parts = append(parts, cur)
	slices.Reverse(parts)
	return parts
}

// project narrows a row group to some leaf columns.
func project(rg parquet.RowGroup, leaves []int) parquet.RowGroup {
	p := projected{rg, make([]parquet.ColumnChunk, 0, len(leaves))}
	for _, c := range leaves {
		p.chunks = append(p.chunks, rg.ColumnChunks()[c])
	}
	return p
}

// projected is a row group narrowed to some of its columns.
type projected struct {
	parquet.RowGroup
	chunks []parquet.ColumnChunk
}

func (p projected) ColumnChunks() []parquet.ColumnChunk { return p.chunks }

// readRowGroup decodes row group g on a worker, one batch at a time: its
// columns divided into parts, each read by its own goroutine into the
// same rows (this one reads the first) when the row type takes values
// directly, else whole rows on this goroutine. The parts form a pipeline:
// a batch goes from the last part (the first columns: split) to the first,
// so that no two goroutines write to the same rows at once.
func readRowGroup[T any](rg parquet.RowGroup, g int, cols *columns, parts [][]int, newDecode func() *formats.RowDec[T], e *formats.Emitter) error {
	dec := newDecode()
	if dec.Setter() == nil || len(parts) < 2 {
		return readRows(project(rg, slices.Concat(parts...)), g, cols, dec, e, 0)
	}
	type batch struct {
		rows  []T
		start int64 // in the row group
		ok    bool  // every part so far set every row
		err   error
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(stop)
		wg.Wait()
	}()
	// Stage p reads part p: the last one cuts the row group into batches,
	// each passes them on to the stage before it, which it may run ahead
	// of by aheadBytes of rows: a stage stalls while its big pages are
	// decompressed, and the others go on meanwhile.
	var zero T
	ahead := min(max(aheadBytes/(formats.BatchRows*max(int(unsafe.Sizeof(zero)), 1)), 1), 1024)
	var in chan *batch
	for p := len(parts) - 1; p >= 1; p-- {
		out := make(chan *batch, ahead)
		wg.Add(1)
		go func(p int, in <-chan *batch, out chan<- *batch) {
			defer wg.Done()
			defer close(out)
			rr := parquet.NewRowGroupRowReader(project(rg, parts[p]))
			defer rr.Close()
			a := newAssembler(cols, newDecode().Setter())
			buf := make([]parquet.Row, formats.BatchRows)
			next := func() *batch {
				if in != nil {
					return <-in
				}
				return nil
			}
			start := int64(0)
			for {
				var b *batch
				if in == nil { // the last stage makes the batches
					left := rg.NumRows() - start
					if left <= 0 {
						return
					}
					b = &batch{rows: formats.NewRows[T](e, int(min(left, formats.BatchRows))), start: start, ok: true}
					start += int64(len(b.rows))
				} else if b = next(); b == nil {
					return
				}
				if b.ok {
					b.ok, b.err = a.setRows(rr, buf, unsafe.Pointer(unsafe.SliceData(b.rows)), len(b.rows), unsafe.Sizeof(b.rows[0]))
				}
				ok := b.ok // b is the next stage's once sent
				select {
				case out <- b:
				case <-stop:
					return
				}
				if !ok {
					return // the first stage takes over
				}
			}
		}(p, in, out)
		in = out
	}
	rr := parquet.NewRowGroupRowReader(project(rg, parts[0]))
	defer rr.Close()
	a := newAssembler(cols, dec.Setter())
	buf := make([]parquet.Row, formats.BatchRows)
	for b := range in {
		if b.ok {
			b.ok, b.err = a.setRows(rr, buf, unsafe.Pointer(unsafe.SliceData(b.rows)), len(b.rows), unsafe.Sizeof(b.rows[0]))
		}
		if b.err != nil {
			return groupErr(g, e.Next(), b.err)
		}
		if !b.ok {
			// A value that does not fit its field as plainly as this: the
			// rest of the row group is decoded whole, from the batch on.
			return readRows(project(rg, slices.Concat(parts...)), g, cols, dec, e, b.start)
		}
		if !formats.EmitRows(e, b.rows) {
			return formats.ErrStopped
		}
	}
	return nil
}

// setRows reads n rows of some columns from rr and sets them in the rows
// at base (of size bytes each); ok is false when a value does not fit its
// field directly.
func (a *assembler) setRows(rr parquet.Rows, buf []parquet.Row, base unsafe.Pointer, n int, size uintptr) (ok bool, err error) {
	ok = true
	for i := 0; i < n; {
		k, err := rr.ReadRows(buf[:min(len(buf), n-i)])
		for _, row := range buf[:k] {
			ok = ok && a.setRow(row, unsafe.Add(base, uintptr(i)*size))
			i++
		}
		if err != nil && (!errors.Is(err, io.EOF) || i < n) {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return false, err
		}
	}
	return ok, nil
}

// readRows decodes the rows of rg from row number from (of the row group)
// on this goroutine: straight into their fields, or from their JSON.
func readRows[T any](rg parquet.RowGroup, g int, cols *columns, dec *formats.RowDec[T], e *formats.Emitter, from int64) error {
	rr := parquet.NewRowGroupRowReader(rg)
	defer rr.Close()
	if from > 0 {
		if err := rr.SeekToRow(from); err != nil {
			return groupErr(g, e.Next(), err)
		}
	}
	a := newAssembler(cols, dec.Setter())
	buf := make([]parquet.Row, formats.BatchRows)
	for {
		n, err := rr.ReadRows(buf)
		if n > 0 {
			rows := formats.NewRows[T](e, n)
			first := e.Next()
			for i := range n {
				if derr := decodeRow(a, dec, buf[i], first+int64(i), g, &rows[i]); derr != nil {
					if i > 0 && !formats.EmitRows(e, rows[:i]) {
						return formats.ErrStopped
					}
					return derr
				}
			}
			// The rows' values are copied out: buf is reused by the next read.
			if !formats.EmitRows(e, rows) {
				return formats.ErrStopped
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return groupErr(g, e.Next(), err)
		}
	}
}

// decodeRow decodes row number n (of row group g) into v: straight into
// its fields, or from its JSON.
func decodeRow[T any](a *assembler, dec *formats.RowDec[T], row parquet.Row, n int64, g int, v *T) error {
	if a.st != nil && a.setRow(row, unsafe.Pointer(v)) {
		return nil
	}
	var zero T
	*v = zero
	var err error
	if a.buf, err = a.appendRow(a.buf[:0], row); err != nil {
		return groupErr(g, n, err)
	}
	if err := dec.JSON(a.buf, v); err != nil {
		return &formats.RowError{Row: n, Err: err}
	}
	return nil
}

// groupErr is err at (or, when reading a column failed, near) row n of
// row group g, keeping the column an inner error names.
func groupErr(g int, n int64, err error) error {
	re := &formats.RowError{Row: n, Err: err}
	var col *formats.RowError
	if errors.As(err, &col) {
		re.Column, re.Err = col.Column, col.Err
	}
	re.Err = fmt.Errorf("row group %d: %w", g, re.Err)
	return re
}

// assembler turns a row's values into fields (or JSON) on one worker.
type assembler struct {
	cols   *columns
	st     *formats.Setter
	fields []*formats.Field // of each column; nil: not a field of the row type
	// The values of the column being assembled: leaf l's values are
	// vals[cur[l]:end[l]].
	vals     parquet.Row
	cur, end []int
	buf, tmp []byte
}

func newAssembler(cols *columns, st *formats.Setter) *assembler {
	a := &assembler{cols: cols, st: st, cur: make([]int, cols.deepest), end: make([]int, cols.deepest)}
	if st != nil {
		a.fields = make([]*formats.Field, len(cols.cols))
		unknown := 0
		for i, c := range cols.cols {
			a.fields[i] = st.Field(c.name)
			if a.fields[i] == nil && !c.skip {
				unknown++
			}
		}
		st.ExpectUnknown(unknown)
	}
	return a
}

// errCorrupt is a row whose values do not match the file's schema.
var errCorrupt = errors.New("values do not match the schema")

// column returns the column of the value at row[i] and the end of that
// column's values (the next value, for a plain column).
func (a *assembler) column(row parquet.Row, i int) (int, int, error) {
	c := row[i].Column()
	if c < 0 || c >= len(a.cols.byLeaf) {
		return 0, 0, fmt.Errorf("value of unknown column %d", c)
	}
	ci := a.cols.byLeaf[c]
	col := &a.cols.cols[ci]
	j := i + 1
	if col.node.shape != leafShape {
		for j < len(row) && row[j].Column() >= c && row[j].Column() < col.hi {
			j++
		}
	}
	return ci, j, nil
}

// load makes vals (the values of column ci, in leaf order) the values to
// assemble.
func (a *assembler) load(vals parquet.Row, ci int) error {
	lo, n := a.cols.cols[ci].lo, a.cols.cols[ci].hi-a.cols.cols[ci].lo
	a.vals = vals
	for l := range n {
		a.cur[l], a.end[l] = -1, -1
	}
	for i, v := range vals {
		l := v.Column() - lo
		if l < 0 || l >= n || a.end[l] >= 0 && a.end[l] != i {
			return errCorrupt
		}
		if a.cur[l] < 0 {
			a.cur[l] = i
		}
		a.end[l] = i + 1
	}
	for l := range n {
		if a.cur[l] < 0 {
			return errCorrupt
		}
	}
	return nil
}

// setRow sets the fields of the zero row at v; false means decode it from
// its JSON instead.
func (a *assembler) setRow(row parquet.Row, v unsafe.Pointer) bool {
	st := a.st
	st.Begin(v)
	for i := 0; i < len(row); {
		ci, j, err := a.column(row, i)
		if err != nil {
			return false
		}
		c := &a.cols.cols[ci]
		vals := row[i:j]
		i = j
		if c.skip {
			continue
		}
		f := a.fields[ci]
		if c.node.shape == leafShape && len(vals) == 1 {
			if f == nil {
				if !st.KeepsUnknown() {
					continue
				}
				buf := st.UnknownBuffer()
				start := len(buf)
				if buf, err = c.node.conv(buf, vals[0]); err != nil {
					return false
				}
				st.KeepUnknown(c.name, buf, start)
				continue
			}
			if vals[0].IsNull() {
				continue // the zero value
			}
			if !a.setLeaf(c.node, f, f.At(v), vals[0], true) {
				return false
			}
			continue
		}
		if a.load(vals, ci) != nil {
			return false
		}
		if f == nil {
			if st.KeepsUnknown() {
				buf := st.UnknownBuffer()
				start := len(buf)
				if buf, err = a.json(buf, c.node); err != nil {
					return false
				}
				st.KeepUnknown(c.name, buf, start)
			}
			continue
		}
		if !a.set(c.node, f, f.At(v)) {
			return false
		}
	}
	st.End()
	return true
}

// appendRow appends the row's JSON object.
func (a *assembler) appendRow(dst []byte, row parquet.Row) ([]byte, error) {
	dst = append(dst, '{')
	first := true
	for i := 0; i < len(row); {
		ci, j, err := a.column(row, i)
		if err != nil {
			return dst, err
		}
		c := &a.cols.cols[ci]
		vals := row[i:j]
		i = j
		if c.skip || c.node.shape == leafShape && len(vals) == 1 && vals[0].IsNull() && c.kind != formats.Unknown {
			continue // a typed field keeps its zero value
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, c.quoted...)
		if c.node.shape == leafShape && len(vals) == 1 {
			dst, err = c.node.conv(dst, vals[0])
		} else if err = a.load(vals, ci); err == nil {
			dst, err = a.json(dst, c.node)
		}
		if err != nil {
			return dst, &formats.RowError{Column: c.name, Err: err}
		}
	}
	return append(dst, '}'), nil
}

// peekDef is the definition level of the next value of n's first leaf.
func (a *assembler) peekDef(n *pnode) (int, error) {
	l := n.first
	if a.cur[l] >= a.end[l] {
		return 0, errCorrupt
	}
	return a.vals[a.cur[l]].DefinitionLevel(), nil
}

// more reports whether the repeated node r has another element.
func (a *assembler) more(r *pnode) bool {
	l := r.first
	return a.cur[l] < a.end[l] && a.vals[a.cur[l]].RepetitionLevel() == r.rep
}

// count is the number of elements of the repeated node r from here.
func (a *assembler) count(r *pnode) int {
	l := r.first
	n := 1
	for j := a.cur[l] + 1; j < a.end[l]; j++ {
		switch rl := a.vals[j].RepetitionLevel(); {
		case rl < r.rep:
			return n
		case rl == r.rep:
			n++
		}
	}
	return n
}

// skip consumes a null or empty value of n: one value of each leaf.
func (a *assembler) skip(n *pnode) {
	for l := n.first; l < n.first+n.nleaf; l++ {
		a.cur[l]++
	}
}

// null reports (and consumes) a null value of n.
func (a *assembler) null(n *pnode) (bool, error) {
	if !n.optional {
		return false, nil
	}
	d, err := a.peekDef(n)
	if err != nil || d >= n.def {
		return false, err
	}
	a.skip(n)
	return true, nil
}

// empty reports (and consumes) an empty list or map n.
func (a *assembler) empty(n *pnode) (bool, error) {
	d, err := a.peekDef(n.rpt)
	if err != nil || d >= n.rpt.def {
		return false, err
	}
	a.skip(n)
	return true, nil
}

// json appends the JSON of the next value of n.
func (a *assembler) json(dst []byte, n *pnode) ([]byte, error) {
	if null, err := a.null(n); err != nil || null {
		return append(dst, "null"...), err
	}
	var err error
	switch n.shape {
	case leafShape:
		l := n.leaf
		if a.cur[l] >= a.end[l] {
			return dst, errCorrupt
		}
		v := a.vals[a.cur[l]]
		a.cur[l]++
		return n.conv(dst, v)
	case groupShape:
		dst = append(dst, '{')
		for k, c := range n.kids {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, c.quoted...)
			if dst, err = a.json(dst, c); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case listShape:
		if e, err := a.empty(n); err != nil || e {
			return append(dst, "[]"...), err
		}
		dst = append(dst, '[')
		for k := 0; k == 0 || a.more(n.rpt); k++ {
			if k > 0 {
				dst = append(dst, ',')
			}
			if dst, err = a.json(dst, n.elem); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	}
	// mapShape
	if e, err := a.empty(n); err != nil || e {
		return append(dst, "{}"...), err
	}
	dst = append(dst, '{')
	for k := 0; k == 0 || a.more(n.rpt); k++ {
		if k > 0 {
			dst = append(dst, ',')
		}
		start := len(dst)
		if dst, err = a.json(dst, n.kids[0]); err != nil {
			return dst, err
		}
		if key := dst[start:]; len(key) == 0 || key[0] != '"' {
			// A JSON object's names are strings: a key of another type
			// becomes its JSON text.
			a.tmp = append(a.tmp[:0], key...)
			dst, _ = jsontext.AppendQuote(dst[:start], a.tmp)
		}
		dst = append(dst, ':')
		if dst, err = a.json(dst, n.kids[1]); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// set sets field f at ptr from the next value of n; false means decode the
// row from its JSON instead.
func (a *assembler) set(n *pnode, f *formats.Field, ptr unsafe.Pointer) bool {
	if f.Kind() == formats.FieldOther {
		return a.setJSON(n, f, ptr)
	}
	if null, err := a.null(n); err != nil {
		return false
	} else if null {
		return true // the zero value (a row's fields are set once)
	}
	st := a.st
	switch n.shape {
	case leafShape:
		l := n.leaf
		if a.cur[l] >= a.end[l] {
			return false
		}
		v := a.vals[a.cur[l]]
		a.cur[l]++
		return a.setLeaf(n, f, ptr, v, false)
	case groupShape:
		g, p := f, ptr
		for g.Kind() == formats.FieldPtr {
			g, p = g.Elem(), st.Deref(g, p)
		}
		if g.Kind() != formats.FieldStruct {
			return a.setJSON(n, f, ptr)
		}
		for _, c := range n.kids {
			sf := g.Sub(c.name)
			if sf == nil {
				var err error
				if a.tmp, err = a.json(a.tmp[:0], c); err != nil { // consumed, not kept
					return false
				}
				continue
			}
			if !a.set(c, sf, sf.At(p)) {
				return false
			}
		}
		return true
	case listShape:
		s, p := f, ptr
		for s.Kind() == formats.FieldPtr {
			s, p = s.Elem(), st.Deref(s, p)
		}
		if s.Kind() != formats.FieldSlice {
			return a.setJSON(n, f, ptr)
		}
		if e, err := a.empty(n); err != nil {
			return false
		} else if e {
			st.MakeSlice(s, p, 0)
			return true
		}
		k := a.count(n.rpt)
		data := st.MakeSlice(s, p, k)
		el := s.Elem()
		for i := range k {
			if !a.set(n.elem, el, s.Index(data, i)) {
				return false
			}
		}
		return true
	}
	return a.setJSON(n, f, ptr)
}

// setJSON sets field f at ptr from the JSON of the next value of n.
func (a *assembler) setJSON(n *pnode, f *formats.Field, ptr unsafe.Pointer) bool {
	var err error
	if a.tmp, err = a.json(a.tmp[:0], n); err != nil {
		return false
	}
	return a.st.JSON(f, ptr, a.tmp)
}

// setLeaf sets field f at ptr from the non-null value v of leaf n; top
// marks a top-level column, where a string holding a JSON object or array
// is a JSON-encoded nested field.
func (a *assembler) setLeaf(n *pnode, f *formats.Field, ptr unsafe.Pointer, v parquet.Value, top bool) bool {
	if v.IsNull() {
		return true
	}
	st := a.st
	switch n.direct {
	case dString:
		b := v.ByteArray()
		if !f.Nested() {
			return st.String(f, ptr, b)
		}
		// JSON text: a JSON-annotated column, or a top-level string
		// holding an object or array (the JSON path inlines the same).
		if n.json || top && len(b) > 0 && (b[0] == '{' || b[0] == '[') {
			return st.JSON(f, ptr, b)
		}
	case dInt:
		if v.Kind() == parquet.Int32 {
			return st.Int(f, ptr, int64(v.Int32()))
		}
		return st.Int(f, ptr, v.Int64())
	case dUint:
		if v.Kind() == parquet.Int32 {
			return st.Uint(f, ptr, uint64(v.Uint32()))
		}
		return st.Uint(f, ptr, v.Uint64())
	case dDouble:
		return st.Float(f, ptr, v.Double(), 64)
	case dFloat:
		return st.Float(f, ptr, float64(v.Float()), 32)
	case dBool:
		return st.Bool(f, ptr, v.Boolean())
	}
	var err error
	if a.tmp, err = n.conv(a.tmp[:0], v); err != nil {
		return false
	}
	return st.JSON(f, ptr, a.tmp)
}
