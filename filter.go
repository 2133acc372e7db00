package lendgraph

import (
	"fmt"
)

// FilterOp is the comparison of a field condition.
type FilterOp string

// Field comparisons of advanced filters.
const (
	OpEq  FilterOp = "eq"
	OpNe  FilterOp = "ne"
	OpGt  FilterOp = "gt"
	OpGte FilterOp = "gte"
	OpLt  FilterOp = "lt"
	OpLte FilterOp = "lte"
	OpIn  FilterOp = "in"
)

// Filter is a node of an advanced filter tree: exactly one of And, Or, Not,
// or a field condition (Field, Op, Value). It marshals to
// {"and":[...]}, {"or":[...]}, {"not":{...}} or {"field":..,"op":..,"value":..}.
type Filter struct {
	And   []*Filter
	Or    []*Filter
	Not   *Filter
	Field string
	Op    FilterOp
	Value any
}

// And matches when every condition matches.
func And(conds ...*Filter) *Filter { return &Filter{And: conds} }

// Or matches when any condition matches.
func Or(conds ...*Filter) *Filter { return &Filter{Or: conds} }

// Not matches when cond does not.
func Not(cond *Filter) *Filter { return &Filter{Not: cond} }

// Eq matches records whose field equals v.
func Eq(field string, v any) *Filter { return &Filter{Field: field, Op: OpEq, Value: v} }

// Ne matches records whose field differs from v.
func Ne(field string, v any) *Filter { return &Filter{Field: field, Op: OpNe, Value: v} }

// Gt matches records whose field is greater than v.
func Gt(field string, v any) *Filter { return &Filter{Field: field, Op: OpGt, Value: v} }

// Gte matches records whose field is at least v.
func Gte(field string, v any) *Filter { return &Filter{Field: field, Op: OpGte, Value: v} }

// Lt matches records whose field is less than v.
func Lt(field string, v any) *Filter { return &Filter{Field: field, Op: OpLt, Value: v} }

// Lte matches records whose field is at most v.
func Lte(field string, v any) *Filter { return &Filter{Field: field, Op: OpLte, Value: v} }

// In matches records whose field equals any of vs.
func In(field string, vs ...any) *Filter { return &Filter{Field: field, Op: OpIn, Value: vs} }

// Validate checks that every node is exactly one of and, or, not, or a field
// condition with a field name and an operator.
func (f *Filter) Validate() error { return f.validate("AdvancedFilters") }

// maxFilterDepth bounds the nesting of an advanced filter: far above any
// real query, and low enough that encoding one stays cheap.
const maxFilterDepth = 64

func (f *Filter) validate(at string) error { return f.validateDepth(at, 1) }

func (f *Filter) validateDepth(at string, depth int) error {
	if f == nil {
		return invalidArg(at, "is nil")
	}
	if depth > maxFilterDepth {
		return invalidArg(at, "the filter is nested more than %d levels deep; flatten it (And and Or take any number of conditions)", maxFilterDepth)
	}
	n := 0
	if f.And != nil {
		n++
	}
	if f.Or != nil {
		n++
	}
	if f.Not != nil {
		n++
	}
	if f.Field != "" || f.Op != "" {
		n++
	}
	if n != 1 {
		return invalidArg(at, "a filter node must be exactly one of And, Or, Not or a field condition; this one has %d", n)
	}
	for i, c := range f.And {
		if err := c.validateDepth(fmt.Sprintf("%s.And[%d]", at, i), depth+1); err != nil {
			return err
		}
	}
	for i, c := range f.Or {
		if err := c.validateDepth(fmt.Sprintf("%s.Or[%d]", at, i), depth+1); err != nil {
			return err
		}
	}
	if f.Not != nil {
		return f.Not.validateDepth(at+".Not", depth+1)
	}
	if f.Field != "" || f.Op != "" {
		if f.Field == "" || f.Op == "" {
			return invalidArg(at, "a field condition needs both Field and Op")
		}
		if f.Op == OpIn {
			vs, ok := f.Value.([]any)
			if !ok {
				return invalidArg(at, "op in needs a list of values")
			}
			if len(vs) == 0 {
				return invalidArg(at, "op in on %q has no values; name at least one (In(field, v1, v2...))", f.Field)
			}
		}
	}
	return nil
}

type filterJSON struct {
	And   []*Filter `json:"and,omitempty"`
	Or    []*Filter `json:"or,omitempty"`
	Not   *Filter   `json:"not,omitempty"`
	Field string    `json:"field,omitempty"`
	Op    FilterOp  `json:"op,omitempty"`
	Value *any      `json:"value,omitempty"`
}

// MarshalJSON writes the node; a condition's value is written even when it
// is false, 0 or null.
func (f Filter) MarshalJSON() ([]byte, error) {
	j := filterJSON{And: f.And, Or: f.Or, Not: f.Not, Field: f.Field, Op: f.Op}
	if f.Field != "" {
		v := f.Value
		j.Value = &v
	}
	return marshal(j)
}

// UnmarshalJSON reads a node written by MarshalJSON.
func (f *Filter) UnmarshalJSON(b []byte) error {
	var j filterJSON
	if err := unmarshal(b, &j); err != nil {
		return err
	}
	*f = Filter{And: j.And, Or: j.Or, Not: j.Not, Field: j.Field, Op: j.Op}
	if j.Value != nil {
		f.Value = *j.Value
	}
	return nil
}
