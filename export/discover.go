package export

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strconv"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// usStates are the two-letter codes of the states, the District of
// Columbia and the territories: the values of "state" when the service has
// no chart to list them. Codes without records are dropped by sizing.
var usStates = []string{
	"AK", "AL", "AR", "AS", "AZ", "CA", "CO", "CT", "DC", "DE", "FL", "GA", "GU", "HI", "IA", "ID", "IL", "IN", "KS", "KY",
	"LA", "MA", "MD", "ME", "MI", "MN", "MO", "MP", "MS", "MT", "NC", "ND", "NE", "NH", "NJ", "NM", "NV", "NY", "OH", "OK",
	"OR", "PA", "PR", "RI", "SC", "SD", "TN", "TX", "UT", "VA", "VI", "VT", "WA", "WI", "WV", "WY",
}

// chartPager is the chart of a resource service that has one.
type chartPager interface {
	AllChart(ctx context.Context, req *lendgraph.ChartRequest, opts ...lendgraph.Option) iter.Seq2[lendgraph.ChartRow, error]
}

// values lists the values of field among the records matching r, and how
// many records the service counts without one (-1: unknown). Sources, in
// order: PlanOptions.Values, the service's chart sliced by the field, the
// state codes for "state".
func (pl *planner[T]) values(ctx context.Context, field string, r *lendgraph.DeliveryRequest) ([]any, int64, error) {
	if vs, ok := pl.opts.Values[field]; ok {
		return dedupe(vs), -1, nil
	}
	rows := pl.chart(ctx, field, listOf(r, lendgraph.MaxPageSize))
	if rows == nil {
		if field == "state" {
			vs := make([]any, len(usStates))
			for i, s := range usStates {
				vs[i] = s
			}
			return vs, -1, nil
		}
		return nil, 0, noChart(field)
	}
	if err := pl.acquire(ctx); err != nil {
		return nil, 0, err
	}
	defer pl.release()
	var vs []any
	unattributed := int64(0)
	for row, err := range rows {
		if err != nil {
			return nil, 0, fmt.Errorf("export: listing the values of %s from the chart: %w", field, err)
		}
		if row.Unattributed {
			unattributed += row.Count
			continue
		}
		vs = append(vs, row.ID)
	}
	vs, err := pl.typed(ctx, field, r, dedupe(vs))
	return vs, unattributed, err
}

// typed gives the chart's values of field the JSON type the records hold
// it in. A chart names every slice by a string id ("true", "2024"), and
// the service compares a filter's value with the field's own type: a
// boolean field filtered by "true" is refused. When a value reads as a
// boolean or a number, one record (free: a page of one) tells the type;
// values of a string field stay strings.
func (pl *planner[T]) typed(ctx context.Context, field string, r *lendgraph.DeliveryRequest, vs []any) ([]any, error) {
	if !slices.ContainsFunc(vs, func(v any) bool { s, _ := v.(string); return looksTyped(s) }) {
		return vs, nil
	}
	page, err := pl.src.List(ctx, listOf(r, 1))
	if err != nil {
		return nil, fmt.Errorf("export: reading a record for the type of %s: %w", field, err)
	}
	if len(page.Data) == 0 {
		return vs, nil
	}
	b, err := json.Marshal(page.Data[0])
	if err != nil {
		return nil, fmt.Errorf("export: reading a record for the type of %s: %w", field, err)
	}
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("export: reading a record for the type of %s: %w", field, err)
	}
	raw := bytes.TrimSpace(rec[field])
	if len(raw) == 0 {
		return vs, nil
	}
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
		s, ok := v.(string)
		if !ok {
			continue
		}
		switch {
		case raw[0] == 't' || raw[0] == 'f':
			if b, err := strconv.ParseBool(s); err == nil && (s == "true" || s == "false") {
				out[i] = b
			}
		case raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'):
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				out[i] = f
			}
		}
	}
	return out, nil
}

// looksTyped reports whether s, a chart's id, reads as a JSON boolean or
// number.
func looksTyped(s string) bool {
	if s == "true" || s == "false" {
		return true
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// chart is the service's chart of the records matching lr sliced by field,
// nil when the resource has none.
func (pl *planner[T]) chart(ctx context.Context, field string, lr *lendgraph.ListRequest) iter.Seq2[lendgraph.ChartRow, error] {
	switch s := any(pl.src).(type) {
	case chartPager:
		return s.AllChart(ctx, &lendgraph.ChartRequest{ListRequest: *lr, Slice: field})
	}
	return nil
}

func noChart(field string) error {
	return invalid("By", "cannot list the values of %q: this resource has no analytics chart to list them from; give them with PlanOptions.Values", field)
}

// checkBy asks the service about every partition field before anything
// is sized or probed, so that a field it does not know is refused even
// when the plan would not have needed it: one chart row sliced by the
// field (or, for values given in PlanOptions.Values, one list row
// filtered by the first). The service refuses a field it does not know.
// Nothing is charged.
func (pl *planner[T]) checkBy(ctx context.Context, base *lendgraph.DeliveryRequest) error {
	for _, field := range pl.opts.By {
		err := pl.checkField(ctx, field, base)
		var api *lendgraph.APIError
		if errors.As(err, &api) && api.StatusCode == http.StatusBadRequest {
			return invalid("By", "the service refuses %q as a partition field: %v", field, err)
		}
		if err != nil {
			return fmt.Errorf("export: checking the partition field %s: %w", field, err)
		}
	}
	return nil
}

func (pl *planner[T]) checkField(ctx context.Context, field string, base *lendgraph.DeliveryRequest) error {
	if err := pl.acquire(ctx); err != nil {
		return err
	}
	defer pl.release()
	if vs := pl.opts.Values[field]; len(vs) > 0 {
		r := withValue(*base, field, vs[0])
		_, err := pl.src.List(ctx, listOf(&r, 1))
		return err
	}
	rows := pl.chart(ctx, field, listOf(base, 1))
	if rows == nil {
		if field == "state" {
			return nil
		}
		return noChart(field)
	}
	for _, err := range rows {
		return err // the first page answered: the field is known
	}
	return nil
}

// dedupe drops repeated values (compared as text) and sorts them.
func dedupe(vs []any) []any {
	seen := map[string]bool{}
	out := make([]any, 0, len(vs))
	for _, v := range vs {
		if k := valueText(v); !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b any) int { return cmp.Compare(valueText(a), valueText(b)) })
	return out
}
