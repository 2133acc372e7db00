package export

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"

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
	return dedupe(vs), unattributed, nil
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
