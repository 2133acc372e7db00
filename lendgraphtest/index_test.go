package lendgraphtest

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"testing"
)

// indexCase is a dataset whose index is checked against the records.
type indexCase struct {
	d    *Dataset
	res  string
	n    int
	recs []Record // the summary records, generated once for the scan
	cols map[string]*column
	vals map[string][]any // values to filter on, by member
}

func newIndexCase(t *testing.T, d *Dataset, res string, rnd *rand.Rand) *indexCase {
	t.Helper()
	c := &indexCase{d: d, res: res, n: d.Len(res), cols: d.index(res), vals: map[string][]any{}}
	for i := range c.n {
		c.recs = append(c.recs, d.Summary(res, i))
	}
	// Planning splits by state and city: the index must hold them, or the
	// fast path would silently be the slow one.
	for _, f := range []string{"state", "city"} {
		if _, ok := c.cols[f]; !ok && res != "originators" {
			t.Fatalf("%s: the index does not hold %s", res, f)
		}
	}
	for name := range d.schema(res) {
		vs := []any{nil, "", "no-such-value", 0.0, -1.5, true, []any{}}
		for range 12 {
			v, ok := c.recs[rnd.IntN(c.n)][name]
			if !ok {
				continue
			}
			vs = append(vs, v)
			switch x := v.(type) {
			case int64: // as JSON numbers arrive
				vs = append(vs, float64(x), float64(x)+0.5)
			case float64:
				vs = append(vs, x+1)
			case []any:
				if len(x) > 0 {
					vs = append(vs, x[0])
				}
			}
		}
		c.vals[name] = vs
	}
	return c
}

func (c *indexCase) fields() []string {
	fs := make([]string, 0, len(c.vals))
	for f := range c.vals {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	return fs
}

func (c *indexCase) value(rnd *rand.Rand, field string) any {
	vs := c.vals[field]
	return vs[rnd.IntN(len(vs))]
}

// flat is a random flatFilters map: a value, or a list of values (null
// included at times).
func (c *indexCase) flat(rnd *rand.Rand, fields []string, most int) map[string]any {
	ff := map[string]any{}
	for range rnd.IntN(most + 1) {
		f := fields[rnd.IntN(len(fields))]
		if rnd.IntN(3) == 0 {
			list := []any{}
			for range rnd.IntN(4) {
				list = append(list, c.value(rnd, f))
			}
			ff[f] = list
		} else {
			ff[f] = c.value(rnd, f)
		}
	}
	return ff
}

var indexOps = []string{"eq", "ne", "in", "gt", "gte", "lt", "lte"}

// node is a random advanced filter of at most depth levels.
func (c *indexCase) node(rnd *rand.Rand, fields []string, depth int) *filterNode {
	k := rnd.IntN(6)
	if depth == 0 {
		k = 5
	}
	kids := func() []*filterNode {
		out := []*filterNode{}
		for range rnd.IntN(4) {
			out = append(out, c.node(rnd, fields, depth-1))
		}
		return out
	}
	switch k {
	case 0, 1:
		return &filterNode{And: kids()}
	case 2:
		return &filterNode{Or: kids()}
	case 3:
		return &filterNode{Not: c.node(rnd, fields, depth-1)}
	}
	f := fields[rnd.IntN(len(fields))]
	// Often the same few members, as an export's filters are.
	if rnd.IntN(2) == 0 {
		f = []string{"state", "city", fields[0]}[rnd.IntN(3)]
		if _, ok := c.vals[f]; !ok {
			f = fields[0]
		}
	}
	leaf := &filterNode{Field: f, Op: indexOps[rnd.IntN(len(indexOps))], Value: c.value(rnd, f)}
	if leaf.Op == "in" {
		list := []any{}
		for range rnd.IntN(5) {
			list = append(list, c.value(rnd, f))
		}
		leaf.Value = list
	}
	return leaf
}

// indexed reports whether the index holds every member named.
func (c *indexCase) indexed(names map[string]bool) bool {
	for f := range names {
		if _, ok := c.cols[f]; !ok {
			return false
		}
	}
	return true
}

// TestIndexAnswersAsTheScan compares the index's answers (lookup, the
// sort and the chart) with the scan of every generated record, over many
// random queries on every member of several resources, records without a
// state or a city among them. A column built from other records than the
// ones served, a table or a posting list that drifted from the codes, or
// a filter operator whose per-value answer differs from the record's
// fails it.
func TestIndexAnswersAsTheScan(t *testing.T) {
	const rows, queries = 2_000, 240
	seed := uint64(22)
	d := newDataset(7, rows, nil)
	d.missing = map[string]missingField{"agents": {field: "city", every: 7}, "loans": {field: "loanType", every: 5}}
	d.noStateShare = 0.05
	for _, res := range []string{"agents", "originators", "loans", "properties", "branches", "companies"} {
		t.Run(res, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, uint64(len(res))))
			c := newIndexCase(t, d, res, rnd)
			fields := c.fields()
			df := dateField[res]
			fast := 0
			for q := range queries {
				var lq listQuery
				var extra map[string]any
				lq.FlatFilters = c.flat(rnd, fields, 2)
				if rnd.IntN(3) > 0 {
					lq.AdvancedFilters = c.node(rnd, fields, 3)
				}
				if rnd.IntN(5) == 0 {
					extra = c.flat(rnd, fields, 1)
				}
				var from, to string
				if df != "" && rnd.IntN(4) == 0 {
					a, _ := c.recs[rnd.IntN(c.n)][df].(string)
					b, _ := c.recs[rnd.IntN(c.n)][df].(string)
					from, to = min(a, b), max(a, b)
				}
				names := map[string]bool{}
				for _, ff := range []map[string]any{lq.FlatFilters, extra} {
					for k := range ff {
						names[k] = true
					}
				}
				if lq.AdvancedFilters != nil {
					lq.AdvancedFilters.fields(names)
				}
				if from != "" {
					names[df] = true
				}
				want := scanRecords(c.n, func(i int) Record { return c.recs[i] }, lq, extra, df, from, to)
				got, ok := d.lookup(res, lq, extra, df, from, to)
				if ok != c.indexed(names) {
					t.Fatalf("query %d reads %v: lookup answered=%v, but the index holds them=%v", q, names, ok, c.indexed(names))
				}
				if !ok {
					continue
				}
				fast++
				if !slices.Equal(got, want) {
					t.Fatalf("query %d (flat %v, extra %v, advanced %s, period %s..%s): index %d records, scan %d; first index %v, scan %v",
						q, lq.FlatFilters, extra, showNode(lq.AdvancedFilters), from, to, len(got), len(want), got[:min(5, len(got))], want[:min(5, len(want))])
				}
				if q%4 == 0 {
					c.checkSort(t, rnd, fields, got)
					c.checkChart(t, rnd, fields, got)
				}
			}
			// Most queries must have taken the fast path, or this test
			// checks little.
			t.Logf("%d of %d queries answered from the index", fast, queries)
			if fast < queries/3 {
				t.Fatalf("only %d of %d queries answered from the index", fast, queries)
			}
		})
	}
}

// checkSort sorts a selection by random members, from the index and from
// the generated records.
func (c *indexCase) checkSort(t *testing.T, rnd *rand.Rand, fields []string, idx []int) {
	t.Helper()
	var by []sortSpec
	for range 1 + rnd.IntN(2) {
		f := fields[rnd.IntN(len(fields))]
		if k := c.d.schema(c.res)[f].kind; k == kindList || k == kindObject {
			continue
		}
		by = append(by, sortSpec{Field: f, Order: []string{"", "asc", "desc"}[rnd.IntN(3)]})
	}
	fastIdx, slowIdx := slices.Clone(idx), slices.Clone(idx)
	c.d.sortRecords(c.res, fastIdx, by, c.cols)
	c.d.sortRecords(c.res, slowIdx, by, nil)
	if !slices.Equal(fastIdx, slowIdx) {
		t.Fatalf("sort by %v: the index orders %v…, the records %v…", by, fastIdx[:min(5, len(fastIdx))], slowIdx[:min(5, len(slowIdx))])
	}
}

// checkChart charts a selection by random members, from the index and
// from the generated records.
func (c *indexCase) checkChart(t *testing.T, rnd *rand.Rand, fields []string, idx []int) {
	t.Helper()
	q := chartQuery{Slice: fields[rnd.IntN(len(fields))]}
	if rnd.IntN(2) == 0 {
		q.Segment = fields[rnd.IntN(len(fields))]
	}
	if rnd.IntN(3) == 0 {
		q.Measure = fields[rnd.IntN(len(fields))]
	}
	members := []string{q.Slice}
	if q.Segment != "" {
		members = append(members, q.Segment)
	}
	if !chartCounts(q) {
		members = append(members, q.Measure)
	}
	sel := selection{idx: idx, n: len(idx)}
	fast := c.d.rowsOf(c.res, members)
	gotList, gotTotal, gotErr := chartRows(c.res, q, sel, fast)
	wantList, wantTotal, wantErr := chartRows(c.res, q, sel, &rowReader{d: c.d, resource: c.res})
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || gotTotal != wantTotal || !reflect.DeepEqual(gotList, wantList) {
		t.Fatalf("chart %+v (from the index: %v): total %v, %d buckets, err %v; from the records: total %v, %d buckets, err %v",
			q, fast.cols != nil, gotTotal, len(gotList), gotErr, wantTotal, len(wantList), wantErr)
	}
}

func showNode(f *filterNode) string {
	switch {
	case f == nil:
		return "none"
	case f.And != nil || f.Or != nil:
		op, kids := "and", f.And
		if f.Or != nil {
			op, kids = "or", f.Or
		}
		s := op + "("
		for i, k := range kids {
			if i > 0 {
				s += ", "
			}
			s += showNode(k)
		}
		return s + ")"
	case f.Not != nil:
		return "not(" + showNode(f.Not) + ")"
	}
	return fmt.Sprintf("%s %s %#v", f.Field, f.Op, f.Value)
}

// TestIndexLeavesOutMembersOfManyValues checks that a member with more
// than maxIndexValues distinct values (an agent's id, e-mail, phone) is
// left out of the index, whichever worker's range saw the values, and that
// a query on it is then answered by the scan, while members of few values
// stay in.
func TestIndexLeavesOutMembersOfManyValues(t *testing.T) {
	d := newDataset(1, 0, map[string]int{"agents": maxIndexValues + 1000})
	cols := d.index("agents")
	for _, f := range []string{"id", "email", "phone"} {
		if _, ok := cols[f]; ok {
			t.Errorf("%s (unique a record, %d records) is in the index", f, d.Len("agents"))
		}
	}
	for _, f := range []string{"state", "city", "brokerage", "isTeamLead", "transactionCount"} {
		if _, ok := cols[f]; !ok {
			t.Errorf("%s is not in the index", f)
		}
	}
	q := listQuery{FlatFilters: map[string]any{"email": d.Summary("agents", 42)["email"]}}
	if _, ok := d.lookup("agents", q, nil, "", "", ""); ok {
		t.Fatal("a query on email was answered from the index")
	}
	if got := d.scan("agents", q, nil, "", "", ""); !slices.Equal(got, []int{42}) {
		t.Fatalf("the scan found %v, want [42]", got)
	}
	b := newColumnBuilder()
	for i := range maxIndexValues {
		b.add(strconv.Itoa(i), true)
	}
	if b.dead {
		t.Fatalf("dead at %d values", maxIndexValues)
	}
	if b.add("one more", true); !b.dead {
		t.Fatalf("alive at %d values", maxIndexValues+1)
	}
}
