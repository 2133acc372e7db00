package export_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// TestPlanRefusesAnEmptyQuery (issue 22, item 3): a filter that matches
// nothing is an *EmptyError, not an export of no files with _SUCCESS;
// PlanOptions.AllowEmpty lands the empty dataset on purpose.
func TestPlanRefusesAnEmptyQuery(t *testing.T) {
	srv, c := fakeFor(t, 300, 0)
	req := &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet, FlatFilters: map[string]any{"state": "tx"}}
	_, err := export.NewPlan(context.Background(), c.Agents, req, &export.PlanOptions{By: []string{"state"}})
	var ee *export.EmptyError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "PlanOptions.AllowEmpty") {
		t.Fatalf("err = %v; want an *EmptyError naming AllowEmpty", err)
	}
	if n := submits(srv); n != 0 {
		t.Errorf("%d submits (ceiling probes) for a query that matches nothing", n)
	}
	noCharge(t, srv)

	p, err := export.NewPlan(context.Background(), c.Agents, req, &export.PlanOptions{By: []string{"state"}, AllowEmpty: true})
	if err != nil || len(p.Shards) != 0 || !p.AllowEmpty {
		t.Fatalf("AllowEmpty: %+v, %v", p, err)
	}
	// A plan of no shard changed to drop AllowEmpty is refused by Run,
	// before it writes anything.
	q := *p
	q.AllowEmpty = false
	dir := filepath.Join(t.TempDir(), "empty")
	dest := openDest(t, dir)
	if _, err := export.Run(context.Background(), c.Agents, &q, dest, runOpts()); !errors.Is(err, export.ErrPlanChanged) {
		t.Fatalf("Run of an empty plan changed: %v; want ErrPlanChanged", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Run of a refused empty plan created %s: %v", dir, err)
	}
	res, err := export.Run(context.Background(), c.Agents, p, dest, runOpts())
	if err != nil || !res.Complete {
		t.Fatalf("Run with AllowEmpty: %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, export.SuccessFile)); err != nil {
		t.Error(err)
	}
	if n := submits(srv); n != 0 {
		t.Errorf("%d submits", n)
	}
}

// TestPlanChecksEveryByField (item 5): every partition field is checked
// with the service before anything is sized or probed, even one the plan
// would not need (every state fits in one delivery here).
func TestPlanChecksEveryByField(t *testing.T) {
	srv, c := fakeFor(t, 300, 5000)
	for _, o := range []*export.PlanOptions{
		{By: []string{"state", "nosuchfield"}},
		{By: []string{"state", "nosuchfield"}, Values: map[string][]any{"nosuchfield": {"x"}}},
		{By: []string{"nosuchfield"}, MaxRows: 100},
	} {
		srv.ResetRequests()
		_, err := export.NewPlan(context.Background(), c.Agents, parquetReq(), o)
		var inv *lendgraph.InvalidArgumentError
		if !errors.As(err, &inv) || inv.Arg != "By" || !strings.Contains(err.Error(), `"nosuchfield"`) {
			t.Errorf("%+v: err = %v; want an invalid By naming the field", o, err)
		}
		if n := submits(srv); n != 0 {
			t.Errorf("%+v: %d submits before the field was refused", o, n)
		}
	}
	if _, err := export.NewPlan(context.Background(), c.Agents, parquetReq(), &export.PlanOptions{By: []string{"state", "city"}}); err != nil {
		t.Errorf("known fields: %v", err)
	}
	noCharge(t, srv)
}

// TestPlanWaitsOutA429WhileProbing (item 7): a service that answers the
// ceiling probe with 429 more often than the client retries is waited
// out, not fatal.
func TestPlanWaitsOutA429WhileProbing(t *testing.T) {
	srv, c := fakeFor(t, 300, 0)
	srv.InjectFault("POST", "/v1/agents/bulk-delivery", lendgraphtest.Fault{Status: 429, Body: `{"error":"rate_limited"}`, Times: 6})
	p, err := export.NewPlan(context.Background(), c.Agents, parquetReq(), &export.PlanOptions{By: []string{"state"}})
	if err != nil {
		t.Fatalf("NewPlan: %v", err)
	}
	if p.MaxRows <= 0 {
		t.Errorf("ceiling %d from %s", p.MaxRows, p.MaxRowsFrom)
	}
	// The client gives up after 1+3 attempts; the planner sends more.
	if n := submits(srv); n != 7 {
		t.Errorf("%d probes reached the fake; want 6 refused and 1 answered", n)
	}
	noCharge(t, srv)
}

// TestPlanWaitsOutA502WhileProbing: the ceiling probe is a submit, and a
// 502 is a job that failed to launch (safe to retry, says the reference):
// four of them, more than the client retries, are waited out as a run's
// submits are retried, not fatal to the plan.
func TestPlanWaitsOutA502WhileProbing(t *testing.T) {
	srv, c := fakeFor(t, 300, 0)
	srv.InjectFault("POST", "/v1/agents/bulk-delivery", lendgraphtest.Fault{Status: 502, Body: `{"error":"job failed to launch"}`, Times: 4})
	p, err := export.NewPlan(context.Background(), c.Agents, parquetReq(), &export.PlanOptions{By: []string{"state"}})
	if err != nil {
		t.Fatalf("NewPlan: %v", err)
	}
	if p.MaxRows <= 0 {
		t.Errorf("ceiling %d from %s", p.MaxRows, p.MaxRowsFrom)
	}
	if n := submits(srv); n != 5 {
		t.Errorf("%d probes reached the fake; want 4 refused and 1 answered", n)
	}
	noCharge(t, srv)
}

// TestPlanByAListField: the service's chart cannot slice agents by tags (a
// list): every record is counted without a value. NewPlan says so, naming
// the field, instead of a shard of every record above the ceiling.
func TestPlanByAListField(t *testing.T) {
	srv, c := fakeFor(t, 2000, 0)
	srv.ResetRequests()
	for _, missing := range []bool{false, true} {
		_, err := export.NewPlan(context.Background(), c.Agents, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV},
			&export.PlanOptions{By: []string{"tags"}, MaxRows: 500, IncludeMissing: missing})
		var ia *lendgraph.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Arg != "By" || !strings.Contains(err.Error(), "not a list or an object") {
			t.Fatalf("IncludeMissing %v: err = %v", missing, err)
		}
	}
	if n := submits(srv); n != 0 {
		t.Errorf("%d submits", n)
	}
}
