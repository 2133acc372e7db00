package export_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// A plan run with the service of another resource is refused before any
// request, whatever the plan says; NewPlan takes the resource from its
// source.
func TestResourceMismatchRefusedBeforeAnySubmit(t *testing.T) {
	srv, c := fakeFor(t, 300, 0)
	p := planAgents(t, srv, c, lendgraph.FormatParquet, "state")
	if p.Resource != "agents" {
		t.Errorf("a plan of c.Agents exports %q", p.Resource)
	}
	var inv *lendgraph.InvalidArgumentError
	_, err := export.Run(context.Background(), c.Loans, p, dirDest(t), runOpts())
	if !errors.As(err, &inv) || inv.Arg != "plan" || !strings.Contains(err.Error(), "loans") {
		t.Errorf("Run of an agents plan with c.Loans = %v; want an invalid plan", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests (%d submits) before the refusal; want none", n, submits(srv))
	}
	if jobs := srv.Jobs(); len(jobs) != 0 {
		t.Errorf("%d jobs started; want none", len(jobs))
	}
}

// A 400 about the request itself (a delivery field the resource does not
// have) stops the run's submits at the first one, and the error says what
// to change, not to run again.
func TestRunStopsOnARefusedRequest(t *testing.T) {
	srv, c := fakeFor(t, 1500, 0)
	req := &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet, Fields: []string{"fullName", "nosuch"}}
	p, err := export.NewPlan(context.Background(), c.Agents, req, &export.PlanOptions{By: []string{"state"}, MaxRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	dest := dirDest(t)
	opts := runOpts()
	opts.Concurrency = 1
	res, err := export.Run(context.Background(), c.Agents, p, dest, opts)
	var re *export.RunError
	var api *lendgraph.APIError
	if !errors.As(err, &re) || !errors.As(err, &api) || api.StatusCode != 400 {
		t.Fatalf("err = %v; want a RunError with the 400", err)
	}
	if n := submits(srv); n != 1 {
		t.Errorf("%d submits; want 1: the refusal is the same for every shard", n)
	}
	msg := err.Error()
	for _, w := range []string{"nosuch", "not one shard", "plan the export again"} {
		if !strings.Contains(msg, w) {
			t.Errorf("the error lacks %q: %s", w, msg)
		}
	}
	if strings.Contains(msg, "run the same export again") {
		t.Errorf("the error says to run again, which would be refused alike: %s", msg)
	}
	if res.Landed != 0 || res.Submitted != 0 {
		t.Errorf("result %+v", res)
	}
}

// A --max-rows above the service's ceiling: the first shard planned
// within the plan's ceiling but above the service's is refused, the error
// names the service's ceiling (not a shard that grew), and no more shards
// are submitted.
func TestRunSaysMaxRowsIsAboveTheServiceCeiling(t *testing.T) {
	srv, c := fakeFor(t, 1500, 0)
	probe := planAgents(t, srv, c, lendgraph.FormatParquet, "state")
	var biggest int64
	for _, s := range probe.Shards {
		biggest = max(biggest, s.Rows)
	}
	ceiling := biggest - 1
	p, err := export.NewPlan(context.Background(), c.Agents, parquetReq(), &export.PlanOptions{By: []string{"state"}, MaxRows: biggest + 100})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: ceiling})
	srv.ResetRequests()
	first := slices.IndexFunc(p.Shards, func(s export.Shard) bool { return s.Rows > ceiling })
	dest := dirDest(t)
	opts := runOpts()
	opts.Concurrency = 1
	_, err = export.Run(context.Background(), c.Agents, p, dest, opts)
	var re *export.RunError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v; want a RunError", err)
	}
	if n := submits(srv); n != first+1 {
		t.Errorf("%d submits; want %d: none after the first shard above the service's ceiling", n, first+1)
	}
	msg := err.Error()
	for _, w := range []string{fmt.Sprintf("above the service's ceiling of %d", ceiling), "PlanOptions.MaxRows", fmt.Sprintf("at most %d", ceiling)} {
		if !strings.Contains(msg, w) {
			t.Errorf("the error lacks %q: %s", w, msg)
		}
	}
	for _, w := range []string{"grew", "run the same export again"} {
		if strings.Contains(msg, w) {
			t.Errorf("the error says %q: %s", w, msg)
		}
	}
	if len(re.Failed) != len(p.Shards)-first {
		t.Errorf("%d shards failed; want %d (the refused one and those not submitted)", len(re.Failed), len(p.Shards)-first)
	}
}

// One lost answer and one failed job in the same run: the failed job's
// shard is to be run again, the uncertain one needs ResubmitUncertain,
// and neither advice covers the other's shard.
func TestRunAdviceForFailedAndUncertainShards(t *testing.T) {
	srv, c := fakeFor(t, 900, 0)
	p := planAgents(t, srv, c, lendgraph.FormatParquet, "state")
	srv.InjectFault("POST", "/v1/agents/bulk-delivery", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
	dest := dirDest(t)
	opts := runOpts()
	opts.Concurrency = 1
	armed := false
	opts.OnEvent = func(e export.Event) {
		if e.Kind == export.EventFailed && !armed { // the cut submit: fail the next shard's job
			armed = true
			srv.FailNextDelivery("storage unavailable")
		}
	}
	_, err := export.Run(context.Background(), c.Agents, p, dest, opts)
	var re *export.RunError
	var ue *export.UncertainError
	if !errors.As(err, &re) || len(re.Failed) != 1 || !errors.As(err, &ue) || len(ue.Shards) != 1 {
		t.Fatalf("err = %v; want one failed and one uncertain shard", err)
	}
	failed, cut := re.Failed[0].Shard, ue.Shards[0].Shard
	if failed == cut {
		t.Fatalf("the same shard %s is failed and uncertain", cut)
	}
	if msg := re.Error(); !strings.Contains(msg, "1 shard failed") || !strings.Contains(msg, "run the same export again") || strings.Contains(msg, cut) {
		t.Errorf("RunError: %s; want 1 shard (%s) to run again, not %s", msg, failed, cut)
	}
	if msg := ue.Error(); !strings.Contains(msg, "1 shard was not submitted again") || !strings.Contains(msg, "ResubmitUncertain") || strings.Contains(msg, failed) {
		t.Errorf("UncertainError: %s; want %s and ResubmitUncertain", msg, cut)
	}
}

// A request that narrows the fields still delivers the partition fields,
// so Rows reads each row's partition value from its file.
func TestRowsReadPartitionValuesWithNarrowedFields(t *testing.T) {
	srv, c := fakeFor(t, 600, 0)
	req := &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet, Fields: []string{"id", "fullName"}}
	p, err := export.NewPlan(context.Background(), c.Agents, req, &export.PlanOptions{By: []string{"state"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"id", "fullName", "state"}; !slices.Equal(p.Request.Fields, want) {
		t.Errorf("plan fields %q; want %q", p.Request.Fields, want)
	}
	dir := t.TempDir()
	dest := openDest(t, dir)
	if _, err := export.Run(context.Background(), c.Agents, p, dest, runOpts()); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for a, err := range export.Rows[lendgraph.Agent](context.Background(), dest) {
		if err != nil {
			t.Fatal(err)
		}
		if a.FullName == "" {
			t.Errorf("agent %s: no fullName", a.ID)
		}
		got[a.State]++
	}
	if want := countBy(srv, "state"); !maps.Equal(got, want) {
		t.Errorf("rows by state %v; the fake has %v", got, want)
	}
}

// Rows of a directory that does not exist, or holds no export, is an
// error that matches fs.ErrNotExist.
func TestRowsOfAMissingDirectory(t *testing.T) {
	for _, dir := range []string{filepath.Join(t.TempDir(), "nosuch"), t.TempDir()} {
		n := 0
		for _, err := range export.Rows[lendgraph.Agent](context.Background(), openDest(t, dir)) {
			n++
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Rows(%s): %v; want an error matching fs.ErrNotExist", dir, err)
			}
		}
		if n != 1 {
			t.Errorf("Rows(%s) yielded %d times; want one error", dir, n)
		}
	}
}
