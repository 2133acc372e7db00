package lendgraphtest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// The checks behind "Strict where the reference is silent" (package doc):
// list queries, charts and delivery fields are checked against the fields
// of the resource's list records, learned from sample records.

// kind is the JSON type of a field's values.
type kind int

const (
	kindString kind = iota
	kindNumber
	kindBool
	kindList   // an array of scalars (elem)
	kindObject // a nested object: neither filterable nor sortable
)

func (k kind) String() string {
	return [...]string{"a string", "a number", "a boolean", "a list", "an object"}[k]
}

// plural names the values a field of this kind holds, for messages.
func (k kind) plural() string {
	return [...]string{"strings", "numbers", "booleans", "lists", "objects"}[k]
}

// field is one member of a resource's summary records.
type field struct {
	kind kind
	elem kind // kindList: the kind of the elements
}

// schemaSample is how many records the schema is read from.
const schemaSample = 256

// resourceSchema is what the sample records of a resource show.
type resourceSchema struct {
	fields map[string]field
	// sample holds each field's first non-null value: the column types of
	// a parquet delivery (an int64 stays an int64, unlike in kinds).
	sample Record
}

// schema returns the fields of a resource's summary records, learned once
// from the first records the seed generates (whatever the resource's size).
func (d *Dataset) schema(resource string) map[string]field {
	return d.schemaOf(resource).fields
}

// samples returns each field's first non-null value (see resourceSchema).
func (d *Dataset) samples(resource string) Record { return d.schemaOf(resource).sample }

func (d *Dataset) schemaOf(resource string) *resourceSchema {
	d.schemaMu.Lock()
	defer d.schemaMu.Unlock()
	if sc, ok := d.schemas[resource]; ok {
		return sc
	}
	sc := &resourceSchema{fields: map[string]field{}, sample: Record{}}
	if slices.Contains(Resources, resource) {
		for i := range schemaSample {
			for k, v := range d.Summary(resource, i) {
				if _, known := sc.fields[k]; known || v == nil {
					continue
				}
				sc.fields[k], sc.sample[k] = fieldOf(v), v
			}
		}
	}
	if d.schemas == nil {
		d.schemas = map[string]*resourceSchema{}
	}
	d.schemas[resource] = sc
	return sc
}

func fieldOf(v any) field {
	k, _ := kindOf(v)
	f := field{kind: k}
	if arr, ok := v.([]any); ok && len(arr) > 0 {
		f.elem, _ = kindOf(arr[0])
	}
	return f
}

// kindOf is the kind of a JSON value; ok is false for null.
func kindOf(v any) (kind, bool) {
	switch v.(type) {
	case nil:
		return 0, false
	case string:
		return kindString, true
	case bool:
		return kindBool, true
	case []any:
		return kindList, true
	case map[string]any:
		return kindObject, true
	}
	if _, ok := toFloat(v); ok {
		return kindNumber, true
	}
	return kindObject, true
}

// Fields lists the members of a resource's summary records, id first and
// the rest by name: the fields its list queries may filter and sort on
// and its deliveries may ask for.
func (d *Dataset) Fields(resource string) []string {
	sc := d.schema(resource)
	out := make([]string, 0, len(sc))
	for k := range sc {
		if k != "id" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	if _, ok := sc["id"]; ok {
		out = append([]string{"id"}, out...)
	}
	return out
}

// queryError is a 400 about one part of a request.
type queryError struct{ msg string }

func (e *queryError) Error() string { return e.msg }

func badQuery(format string, args ...any) error {
	return &queryError{fmt.Sprintf(format, args...)}
}

// unknownField says that name is not a field of resource, and what is.
func (d *Dataset) unknownField(at, name, resource string) error {
	if slices.Contains(detailOnly[resource], name) {
		return badQuery("%s: %q is only on the complete %s record (GET /v1/%s/{id}), not on list records", at, name, resource, resource)
	}
	return badQuery("%s: %q is not a field of %s; fields: %s", at, name, resource, strings.Join(d.Fields(resource), ", "))
}

// checkQuery validates a list query against the resource's fields.
func (d *Dataset) checkQuery(resource string, q listQuery) error {
	sc := d.schema(resource)
	for i, sp := range q.Sort {
		at := fmt.Sprintf("sort[%d]", i)
		f, ok := sc[sp.Field]
		switch {
		case sp.Field == "":
			return badQuery("%s.field is required", at)
		case !ok:
			return d.unknownField(at+".field", sp.Field, resource)
		case f.kind == kindList || f.kind == kindObject:
			return badQuery("%s.field: %s holds %s and cannot be sorted on", at, sp.Field, f.kind.plural())
		}
		if sp.Order != "" && sp.Order != "asc" && sp.Order != "desc" {
			return badQuery("%s.order: %q is not asc or desc", at, sp.Order)
		}
	}
	if err := d.checkFlat("flatFilters", resource, q.FlatFilters); err != nil {
		return err
	}
	if q.AdvancedFilters != nil {
		return d.checkNode("advancedFilters", resource, q.AdvancedFilters)
	}
	return nil
}

// checkFlat validates flat filters: each a known field and a value of its
// type, or a list of such values (any of them); null matches records
// without the field.
func (d *Dataset) checkFlat(at, resource string, ff map[string]any) error {
	for _, k := range sortedKeys(ff) {
		v := ff[k]
		if list, ok := v.([]any); ok {
			for j, x := range list {
				if err := d.checkValue(fmt.Sprintf("%s.%s[%d]", at, k, j), resource, k, x, true); err != nil {
					return err
				}
			}
			continue
		}
		if err := d.checkValue(at+"."+k, resource, k, v, true); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkValue checks one filter value against the field: a field of the
// resource that can be filtered, and a value of its type (a list field
// takes a value of its elements' type). nullOK allows null (equality:
// "the field is absent").
func (d *Dataset) checkValue(at, resource, name string, v any, nullOK bool) error {
	f, ok := d.schema(resource)[name]
	if !ok {
		return d.unknownField(at, name, resource)
	}
	if f.kind == kindObject {
		return badQuery("%s: %s holds objects and cannot be filtered on", at, name)
	}
	want := f.kind
	if want == kindList {
		want = f.elem
	}
	got, notNull := kindOf(v)
	switch {
	case !notNull && nullOK:
		return nil
	case !notNull:
		return badQuery("%s: null is not %s (null works with eq, ne and in only)", at, want)
	case got != want:
		return badQuery("%s: %s is %s, but %s holds %s", at, showValue(v), got, name, want.plural())
	}
	return nil
}

func showValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// checkNode validates an advancedFilters node: its shape, and for a field
// condition the field, the operator and the value's type.
func (d *Dataset) checkNode(at, resource string, f *filterNode) error {
	if f == nil {
		return badQuery("%s: null filter node", at)
	}
	n := 0
	for _, set := range []bool{f.And != nil, f.Or != nil, f.Not != nil, f.Field != "" || f.Op != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return badQuery("%s: a filter node must have exactly one of and, or, not, field", at)
	}
	for i, c := range f.And {
		if err := d.checkNode(fmt.Sprintf("%s.and[%d]", at, i), resource, c); err != nil {
			return err
		}
	}
	for i, c := range f.Or {
		if err := d.checkNode(fmt.Sprintf("%s.or[%d]", at, i), resource, c); err != nil {
			return err
		}
	}
	if f.Not != nil {
		return d.checkNode(at+".not", resource, f.Not)
	}
	if f.Field == "" && f.Op == "" {
		return nil
	}
	if f.Field == "" {
		return badQuery("%s.field is required with op %q", at, f.Op)
	}
	fld, ok := d.schema(resource)[f.Field]
	if !ok {
		return d.unknownField(at+".field", f.Field, resource)
	}
	switch f.Op {
	case "eq", "ne":
		return d.checkValue(at+".value", resource, f.Field, f.Value, true)
	case "gt", "gte", "lt", "lte":
		if fld.kind == kindList {
			return badQuery("%s.op: %s on %s, which holds lists: use eq (contains) or in", at, f.Op, f.Field)
		}
		return d.checkValue(at+".value", resource, f.Field, f.Value, false)
	case "in":
		list, ok := f.Value.([]any)
		if !ok {
			return badQuery("%s.value: op in on %q needs an array value", at, f.Field)
		}
		for j, x := range list {
			if err := d.checkValue(fmt.Sprintf("%s.value[%d]", at, j), resource, f.Field, x, true); err != nil {
				return err
			}
		}
		return nil
	case "":
		return badQuery("%s.op is required on %q: one of eq, ne, gt, gte, lt, lte, in", at, f.Field)
	}
	return badQuery("%s.op: unknown op %q on %q; ops: eq, ne, gt, gte, lt, lte, in", at, f.Op, f.Field)
}

// checkFields validates a list of field names (a delivery's fields, an
// entitlement's columns): each must be a field of the resource's list
// records. at names the list in messages.
func (d *Dataset) checkFields(at, resource string, fields []string) error {
	sc := d.schema(resource)
	for i, f := range fields {
		if _, ok := sc[f]; !ok {
			return d.unknownField(fmt.Sprintf("%s[%d]", at, i), f, resource)
		}
	}
	return nil
}
