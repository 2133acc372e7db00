package pqrows

import (
	"github.com/go-json-experiment/json/jsontext"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/lendgraph/lendgraph-go/internal/formats"
)

// column is a top-level field of the file, as the row type sees it.
type column struct {
	name   string
	quoted []byte // the JSON name, with the colon
	lo, hi int    // its leaf columns
	kind   formats.Kind
	skip   bool   // the row type neither has the field nor keeps unknown ones
	node   *pnode // how its values assemble
}

// shape is what a schema node assembles into.
type shape uint8

const (
	leafShape  shape = iota // one value
	groupShape              // a JSON object of its kids
	listShape               // a JSON array of elem (a LIST, or a bare repeated field)
	mapShape                // a JSON object of key/value pairs (a MAP)
)

// pnode is a schema node with what assembling a value of it needs, in the
// record shredding's terms: a value of the node is present (not null) at
// definition level def, and its repeated node repeats at level rpt.rep.
type pnode struct {
	name     string
	quoted   []byte // the JSON name, with the colon
	shape    shape
	optional bool
	def      int
	rep      int      // of a repeated node
	kids     []*pnode // groupShape; mapShape: key and value
	rpt      *pnode   // listShape, mapShape: the repeated node
	elem     *pnode   // listShape: the element (rpt itself for a 2-level list)
	first    int      // the node's first leaf, relative to its column
	nleaf    int
	leaf     int // leafShape: the leaf, relative to its column
	conv     converter
	direct   direct
	json     bool // a JSON-annotated leaf
}

// columns maps a file's schema to the row type's fields.
type columns struct {
	cols   []column
	byLeaf []int // top-level column of each leaf column
	leaves int
	// deepest: the most leaves of one column
	deepest int
}

func newColumns(s *parquet.Schema, schema formats.Schema) *columns {
	c := &columns{}
	for _, f := range s.Fields() {
		lo := c.leaves
		k, known := schema.Lookup(f.Name())
		n := buildNode(f, 0, 0, &c.leaves, lo, k, true)
		name, _ := jsontext.AppendQuote(nil, f.Name())
		c.cols = append(c.cols, column{name: f.Name(), quoted: append(name, ':'), lo: lo, hi: c.leaves, kind: k, node: n,
			skip: !known && !schema.KeepsUnknown() || f.Name() == ""})
		for range c.leaves - lo {
			c.byLeaf = append(c.byLeaf, len(c.cols)-1)
		}
		c.deepest = max(c.deepest, c.leaves-lo)
	}
	return c
}

// buildNode builds the assembly node of schema node f whose parent is
// present at definition level def and repeats at rep; leaves counts the
// leaf columns so far, base is the column's first. k is the row type's
// kind for a top-level field.
func buildNode(f parquet.Field, def, rep int, leaves *int, base int, k formats.Kind, top bool) *pnode {
	n := &pnode{name: f.Name(), optional: f.Optional(), def: def, rep: rep, first: *leaves - base}
	n.quoted, _ = jsontext.AppendQuote(nil, f.Name())
	n.quoted = append(n.quoted, ':')
	if f.Optional() || f.Repeated() {
		n.def++
	}
	if f.Repeated() {
		n.rep++
		// A bare repeated field: a list of its values, never null.
		inst := *n
		inst.shape, inst.optional = leafShape, false
		el := buildInstance(f, &inst, leaves, base, k, false)
		return &pnode{name: n.name, quoted: n.quoted, shape: listShape, def: def, rep: rep, rpt: el, elem: el,
			first: el.first, nleaf: el.nleaf}
	}
	return buildInstance(f, n, leaves, base, k, top)
}

// buildInstance fills in n, a value of f (for a repeated f, one element).
func buildInstance(f parquet.Field, n *pnode, leaves *int, base int, k formats.Kind, top bool) *pnode {
	if f.Leaf() {
		n.shape, n.leaf, n.nleaf = leafShape, *leaves-base, 1
		*leaves++
		t := f.Type()
		if !top {
			// Strings inside native nested values stay strings.
			k = formats.String
			if isJSONType(t) {
				k = formats.Nested
			}
		}
		n.conv, n.direct, n.json = newConverter(t, k), directOf(t), isJSONType(t)
		return n
	}
	kids := f.Fields()
	switch {
	case isAnnotated(f, mapAnnotation) && len(kids) == 1 && kids[0].Repeated() && !kids[0].Leaf() && len(kids[0].Fields()) == 2:
		n.shape = mapShape
		n.rpt = buildNode(kids[0], n.def, n.rep, leaves, base, k, false).rpt
		n.kids = n.rpt.kids
	case isAnnotated(f, listAnnotation) && len(kids) == 1 && kids[0].Repeated():
		n.shape = listShape
		r := kids[0]
		if !r.Leaf() && len(r.Fields()) == 1 && r.Name() != "array" && r.Name() != f.Name()+"_tuple" {
			// Three levels: the repeated group holds the element.
			n.rpt = &pnode{name: r.Name(), def: n.def + 1, rep: n.rep + 1, first: *leaves - base}
			n.elem = buildNode(r.Fields()[0], n.rpt.def, n.rpt.rep, leaves, base, k, false)
			n.rpt.nleaf = n.elem.nleaf
		} else {
			// Two levels: the repeated field is the element.
			n.rpt = buildNode(r, n.def, n.rep, leaves, base, k, false).rpt
			n.elem = n.rpt
		}
	default:
		n.shape = groupShape
		for _, kf := range kids {
			n.kids = append(n.kids, buildNode(kf, n.def, n.rep, leaves, base, k, false))
		}
	}
	n.nleaf = *leaves - base - n.first
	return n
}

type annotation uint8

const (
	listAnnotation annotation = iota
	mapAnnotation
)

func isAnnotated(f parquet.Field, a annotation) bool {
	t := f.Type()
	if lt := t.LogicalType(); lt != nil {
		switch lt.Value.(type) {
		case *format.ListType:
			return a == listAnnotation
		case *format.MapType:
			return a == mapAnnotation
		}
	}
	if ct := t.ConvertedType(); ct != nil {
		switch *ct {
		case deprecated.List:
			return a == listAnnotation
		case deprecated.Map, deprecated.MapKeyValue:
			return a == mapAnnotation
		}
	}
	return false
}

func isJSONType(t parquet.Type) bool {
	if lt := t.LogicalType(); lt != nil {
		if _, ok := lt.Value.(*format.JsonType); ok {
			return true
		}
	}
	ct := t.ConvertedType()
	return ct != nil && *ct == deprecated.Json
}
