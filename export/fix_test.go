package export_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
)

// A resource name that is not the source's is refused before any request:
// by NewPlan, and by Run for a plan read from disk.
func TestResourceMismatchRefusedBeforeAnySubmit(t *testing.T) {
	srv, c := fakeFor(t, 300, 0)
	var inv *lendgraph.InvalidArgumentError
	_, err := export.NewPlan(context.Background(), c.Agents, "loans", parquetReq(), &export.PlanOptions{By: []string{"state"}})
	if !errors.As(err, &inv) || inv.Arg != "resource" || !strings.Contains(err.Error(), "agents") {
		t.Errorf("NewPlan(c.Agents, \"loans\") = %v; want an invalid resource naming agents", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests before the refusal; want none", n)
	}

	p := planAgents(t, srv, c, lendgraph.FormatParquet, "state")
	p.Resource = "loans" // as a plan file edited, or run with the wrong service
	_, err = export.Run(context.Background(), c.Agents, p, runOpts(t.TempDir()))
	if !errors.As(err, &inv) || inv.Arg != "plan" {
		t.Errorf("Run of a loans plan with c.Agents = %v; want an invalid plan", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests (%d submits) before the refusal; want none", n, submits(srv))
	}
	if jobs := srv.Jobs(); len(jobs) != 0 {
		t.Errorf("%d jobs started; want none", len(jobs))
	}
}
