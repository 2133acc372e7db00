package main

import (
	"encoding/json"
	"strings"

	"github.com/spf13/cobra"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// queryFlags are the list filters shared by list and deliver.
type queryFlags struct {
	filters []string
	where   string
	period  string
	sorts   []string
}

func (q *queryFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&q.filters, "filter", nil, "field=value filter (repeatable; repeating a field matches any of its values)")
	f.StringVar(&q.where, "where", "", "advanced filter as JSON, e.g. '{\"and\":[{\"field\":\"state\",\"op\":\"eq\",\"value\":\"TX\"}]}'")
	f.StringVar(&q.period, "period", "", "time window: 2024, last12Months, yearToDate, allTime")
	f.StringArrayVar(&q.sorts, "sort", nil, "field[:asc|desc] (repeatable)")
}

// set reports whether any query flag was given.
func (q *queryFlags) set() bool {
	return len(q.filters) > 0 || q.where != "" || q.period != "" || len(q.sorts) > 0
}

// parts returns the filters, period and sort of a list request.
func (q *queryFlags) parts() (flat map[string]any, adv *lendgraph.Filter, period lendgraph.Period, sort []lendgraph.Sort, err error) {
	for _, f := range q.filters {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, nil, "", nil, usagef("--filter %q: want field=value", f)
		}
		if flat == nil {
			flat = map[string]any{}
		}
		val := literal(v)
		switch prev := flat[k].(type) {
		case nil:
			flat[k] = val
		case []any:
			flat[k] = append(prev, val)
		default:
			flat[k] = []any{prev, val}
		}
	}
	if q.where != "" {
		if flat != nil {
			return nil, nil, "", nil, usagef("use --filter or --where, not both")
		}
		adv = new(lendgraph.Filter)
		if err := json.Unmarshal([]byte(q.where), adv); err != nil {
			return nil, nil, "", nil, usagef("--where %q: not a filter in JSON: %v", q.where, err)
		}
		if err := adv.Validate(); err != nil {
			return nil, nil, "", nil, usagef("--where %q: %v", q.where, err)
		}
	}
	for _, s := range q.sorts {
		field, order, _ := strings.Cut(s, ":")
		if field == "" {
			return nil, nil, "", nil, usagef("--sort %q: want field or field:desc", s)
		}
		switch order {
		case "", "asc", "desc":
		default:
			return nil, nil, "", nil, usagef("--sort %q: order must be asc or desc", s)
		}
		sort = append(sort, lendgraph.Sort{Field: field, Order: lendgraph.SortOrder(order)})
	}
	return flat, adv, lendgraph.Period(q.period), sort, nil
}

// literal reads a filter value: a JSON number, true, false or null as such,
// anything else as a string.
func literal(v string) any {
	var x any
	if err := json.Unmarshal([]byte(v), &x); err == nil {
		switch x.(type) {
		case float64, bool, nil:
			return x
		}
	}
	return v
}
