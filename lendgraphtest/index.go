package lendgraphtest

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
)

// The index behind list totals, counts, charts and delivery selections.
//
// Records are generated on demand, so a query that filters a resource had
// to generate every record of it to test each one: a million-row resource
// cost seconds a query, and planning an export (a total for every shard,
// a chart for every split) cost that a thousand times over. The dataset is
// fixed once the server runs (seed, sizes, missing fields and the share of
// records without a state are set before it serves, and nothing changes
// them after), so each resource's scalar members are read once, on its
// first filtered query, into dictionary-encoded columns: a query then
// tests a field's distinct values once, not every record's, and reads the
// records of a value from its posting list. A query that names a member
// the index does not hold (a list, an object, or a member of more than
// maxIndexValues distinct values) is answered by generating every record,
// as before. Either way the answer is the one the filter functions give on
// the generated records (index_test.go checks the two against each other).

// maxIndexValues is the most distinct values an indexed member may have;
// a member with more (ids, e-mail addresses, amounts, zip codes) is left
// out, so that its dictionary does not cost as much as the records. It
// must stay below absent.
const maxIndexValues = 8192

// absent is the code of a record that lacks the member.
const absent = math.MaxUint16

// column is one scalar member of a resource's summary records,
// dictionary-encoded.
type column struct {
	// codes[i] is the index in vals of record i's value, or absent.
	codes []uint16
	vals  []any

	postsOnce sync.Once
	// posts[c] are the records whose code is c, ascending; posts[len(vals)]
	// those without the member. Built on first use (postings).
	posts [][]int32
}

// value is record i's value of the member, and whether it has one.
func (c *column) value(i int) (any, bool) {
	code := c.codes[i]
	if code == absent {
		return nil, false
	}
	return c.vals[code], true
}

// slot is the index of code in tables built over vals (see tableOf):
// absent records take the last slot.
func (c *column) slot(code uint16) int {
	if code == absent {
		return len(c.vals)
	}
	return int(code)
}

// postings returns the records of each code, ascending (see posts).
func (c *column) postings() [][]int32 {
	c.postsOnce.Do(func() {
		counts := make([]int, len(c.vals)+1)
		for _, code := range c.codes {
			counts[c.slot(code)]++
		}
		all := make([]int32, len(c.codes))
		c.posts = make([][]int32, len(counts))
		at := 0
		for s, n := range counts {
			c.posts[s] = all[at : at : at+n]
			at += n
		}
		for i, code := range c.codes {
			s := c.slot(code)
			c.posts[s] = append(c.posts[s], int32(i))
		}
	})
	return c.posts
}

// tableOf evaluates match once per distinct value (and once for a record
// without the member): the result has one slot per code, absent last.
func (c *column) tableOf(field string, match func(Record) bool) []bool {
	t := make([]bool, len(c.vals)+1)
	r := Record{}
	for code, v := range c.vals {
		r[field] = v
		t[code] = match(r)
	}
	delete(r, field)
	t[len(c.vals)] = match(r)
	return t
}

// resourceIndex holds the indexed members of one resource.
type resourceIndex struct {
	once sync.Once
	cols map[string]*column
}

// index returns the columns of a resource's scalar members, reading every
// record once on the first call for the resource.
func (d *Dataset) index(resource string) map[string]*column {
	d.indexMu.Lock()
	if d.indexes == nil {
		d.indexes = map[string]*resourceIndex{}
	}
	ix, ok := d.indexes[resource]
	if !ok {
		ix = &resourceIndex{}
		d.indexes[resource] = ix
	}
	d.indexMu.Unlock()
	ix.once.Do(func() { ix.cols = d.buildIndex(resource) })
	return ix.cols
}

// dictKey is the key of a scalar that is not a string in a column's
// dictionary (columnBuilder.others). Floats are keyed by their bits, so
// that 0 and -0 (which print differently) stay apart.
func dictKey(v any) (any, bool) {
	switch x := v.(type) {
	case bool, int64, int:
		return x, true
	case float64:
		return floatBits(math.Float64bits(x)), true
	}
	return nil, false
}

type floatBits uint64

// columnBuilder reads one member's values from a range of records.
type columnBuilder struct {
	strs   map[string]uint16 // the dictionary of strings (most values)
	others map[any]uint16    // of the other scalars, by dictKey
	vals   []any
	dead   bool // a value that is not a scalar, or too many distinct values
}

func newColumnBuilder() *columnBuilder {
	return &columnBuilder{strs: map[string]uint16{}, others: map[any]uint16{}}
}

func (b *columnBuilder) add(v any, ok bool) uint16 {
	if !ok || b.dead {
		return absent
	}
	str, isStr := v.(string)
	var key any
	var code uint16
	var seen bool
	if isStr {
		code, seen = b.strs[str]
	} else {
		var scalar bool
		if key, scalar = dictKey(v); !scalar {
			b.dead = true
			return absent
		}
		code, seen = b.others[key]
	}
	if seen {
		return code
	}
	if len(b.vals) == maxIndexValues {
		b.dead = true
		return absent
	}
	code = uint16(len(b.vals))
	if isStr {
		b.strs[str] = code
	} else {
		b.others[key] = code
	}
	b.vals = append(b.vals, v)
	return code
}

// buildIndex reads every summary record of a resource once, on all cores
// (each worker encodes a range of records with its own dictionaries, which
// are then merged), and keeps the members whose values are all scalars of
// at most maxIndexValues distinct values.
func (d *Dataset) buildIndex(resource string) map[string]*column {
	n := d.Len(resource)
	var fields []string
	for name, f := range d.schema(resource) {
		if f.kind != kindList && f.kind != kindObject {
			fields = append(fields, name)
		}
	}
	slices.Sort(fields)
	codes := make([][]uint16, len(fields))
	for f := range fields {
		codes[f] = make([]uint16, n)
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), n/4096))
	parts := make([][]*columnBuilder, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := n*w/workers, n*(w+1)/workers
		bs := make([]*columnBuilder, len(fields))
		for f := range bs {
			bs[f] = newColumnBuilder()
		}
		parts[w] = bs
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				r := d.Summary(resource, i)
				for f, name := range fields {
					v, ok := r[name]
					codes[f][i] = bs[f].add(v, ok)
				}
			}
		})
	}
	wg.Wait()
	cols := map[string]*column{}
	for f, name := range fields {
		if c := mergeColumn(codes[f], parts, f, workers, n); c != nil {
			cols[name] = c
		}
	}
	return cols
}

// mergeColumn merges the workers' dictionaries of field f into one and
// recodes each worker's range of codes to it; nil when the member cannot
// be indexed.
func mergeColumn(codes []uint16, parts [][]*columnBuilder, f, workers, n int) *column {
	merged := newColumnBuilder()
	remaps := make([][]uint16, workers)
	for w := range workers {
		b := parts[w][f]
		if b.dead {
			return nil
		}
		remaps[w] = make([]uint16, len(b.vals))
		for code, v := range b.vals {
			remaps[w][code] = merged.add(v, true)
		}
		if merged.dead {
			return nil
		}
	}
	for w := range workers {
		lo, hi := n*w/workers, n*(w+1)/workers
		for i := lo; i < hi; i++ {
			if codes[i] != absent {
				codes[i] = remaps[w][codes[i]]
			}
		}
	}
	return &column{codes: codes, vals: merged.vals}
}

// cond is one conjunct of a compiled query: a table over the codes of one
// column, or (when it reads several members) a function of the record.
type cond struct {
	col   *column
	table []bool
	fn    func(i int) bool
}

func (c *cond) test(i int) bool {
	if c.col != nil {
		return c.table[c.col.slot(c.col.codes[i])]
	}
	return c.fn(i)
}

// compiler turns the parts of a query into conds over a resource's columns;
// ok turns false at the first member the index does not hold.
type compiler struct {
	cols map[string]*column
	ok   bool
}

// flat is the cond of one flat filter (flatMatch on the member alone).
func (cp *compiler) flat(field string, want any) cond {
	c, ok := cp.cols[field]
	if !ok {
		cp.ok = false
		return cond{}
	}
	ff := map[string]any{field: want}
	return cond{col: c, table: c.tableOf(field, func(r Record) bool { return flatMatch(r, ff) })}
}

// node compiles an advanced filter node: a subtree that reads one member
// becomes a table over its codes; one that reads several, a function that
// combines its children.
func (cp *compiler) node(f *filterNode) cond {
	fields := map[string]bool{}
	f.fields(fields)
	if len(fields) == 1 {
		for name := range fields {
			c, ok := cp.cols[name]
			if !ok {
				cp.ok = false
				return cond{}
			}
			return cond{col: c, table: c.tableOf(name, f.match)}
		}
	}
	var kids []cond
	for _, k := range append(append([]*filterNode{}, f.And...), f.Or...) {
		kids = append(kids, cp.node(k))
	}
	switch {
	case f.And != nil:
		return cond{fn: func(i int) bool {
			for k := range kids {
				if !kids[k].test(i) {
					return false
				}
			}
			return true
		}}
	case f.Or != nil:
		return cond{fn: func(i int) bool {
			for k := range kids {
				if kids[k].test(i) {
					return true
				}
			}
			return false
		}}
	case f.Not != nil:
		not := cp.node(f.Not)
		return cond{fn: func(i int) bool { return !not.test(i) }}
	}
	// A leaf reads exactly one member, so it was compiled above.
	panic(fmt.Sprintf("lendgraphtest: filter node on %d fields", len(fields)))
}

// fields adds the members a filter node reads to set.
func (f *filterNode) fields(set map[string]bool) {
	for _, k := range f.And {
		k.fields(set)
	}
	for _, k := range f.Or {
		k.fields(set)
	}
	if f.Not != nil {
		f.Not.fields(set)
	}
	if f.Field != "" {
		set[f.Field] = true
	}
}

// conjuncts splits an advanced filter into the nodes its top-level ands
// join.
func (f *filterNode) conjuncts() []*filterNode {
	if f.And == nil {
		return []*filterNode{f}
	}
	var out []*filterNode
	for _, k := range f.And {
		out = append(out, k.conjuncts()...)
	}
	return out
}

// lookup answers the filtering part of selectRecords (flat filters, extra
// filters, the advanced filter and the period [from, to] on the date
// member df) from the index: the matching records, ascending. ok is false
// when the query reads a member the index does not hold.
func (d *Dataset) lookup(resource string, q listQuery, extra map[string]any, df, from, to string) (idx []int, ok bool) {
	cp := &compiler{cols: d.index(resource), ok: true}
	var conds []cond
	for _, ff := range []map[string]any{q.FlatFilters, extra} {
		for _, k := range sortedKeys(ff) {
			conds = append(conds, cp.flat(k, ff[k]))
		}
	}
	if q.AdvancedFilters != nil {
		for _, f := range q.AdvancedFilters.conjuncts() {
			conds = append(conds, cp.node(f))
		}
	}
	if from != "" && df != "" {
		if c, ok := cp.cols[df]; ok {
			conds = append(conds, cond{col: c, table: c.tableOf(df, func(r Record) bool {
				day, _ := r[df].(string)
				return day >= from && day <= to
			})})
		} else {
			cp.ok = false
		}
	}
	if !cp.ok {
		return nil, false
	}
	return matching(d.Len(resource), conds), true
}

// matching returns the records 0..n-1 that pass every cond, ascending. The
// candidates are the records of the one-member cond that admits the
// fewest (from its posting lists); every record when there is none.
func matching(n int, conds []cond) []int {
	best, bestCount := -1, n+1
	for k, c := range conds {
		if c.col == nil {
			continue
		}
		posts := c.col.postings()
		count := 0
		for s, yes := range c.table {
			if yes {
				count += len(posts[s])
			}
		}
		if count < bestCount {
			best, bestCount = k, count
		}
	}
	idx := []int{}
	keep := func(i int) {
		for k := range conds {
			if !conds[k].test(i) {
				return
			}
		}
		idx = append(idx, i)
	}
	if best < 0 || bestCount > n/8 {
		for i := range n {
			keep(i)
		}
		return idx
	}
	c := conds[best]
	var cands []int32
	posts := c.col.postings()
	for s, yes := range c.table {
		if yes {
			cands = append(cands, posts[s]...)
		}
	}
	slices.Sort(cands)
	for _, i := range cands {
		keep(int(i))
	}
	return idx
}

// rowReader reads members of the records of a selection, one record at a
// time: from the index when it holds every member asked for, else from
// each generated summary record.
type rowReader struct {
	d        *Dataset
	resource string
	cols     map[string]*column // nil: generate each record
	i        int
	rec      Record
}

// rowsOf returns a reader of the members of a resource's records.
func (d *Dataset) rowsOf(resource string, members []string) *rowReader {
	r := &rowReader{d: d, resource: resource, cols: d.index(resource)}
	for _, m := range members {
		if _, ok := r.cols[m]; !ok {
			r.cols = nil
			break
		}
	}
	return r
}

// at moves the reader to record i.
func (r *rowReader) at(i int) {
	r.i = i
	if r.cols == nil {
		r.rec = r.d.Summary(r.resource, i)
	}
}

// value is the current record's value of member, and whether it has one.
func (r *rowReader) value(member string) (any, bool) {
	if r.cols == nil {
		v, ok := r.rec[member]
		return v, ok
	}
	return r.cols[member].value(r.i)
}

// get is the current record's value of member; nil without one.
func (r *rowReader) get(member string) any {
	v, _ := r.value(member)
	return v
}

// texter returns a function of the current record: key of its value of
// member. From the index, key runs once per distinct value.
func (r *rowReader) texter(member string, key func(v any, ok bool) string) func() string {
	if r.cols == nil {
		return func() string { return key(r.value(member)) }
	}
	c := r.cols[member]
	texts := make([]string, len(c.vals)+1)
	done := make([]bool, len(texts))
	return func() string {
		s := c.slot(c.codes[r.i])
		if !done[s] {
			texts[s], done[s] = key(c.value(r.i)), true
		}
		return texts[s]
	}
}
