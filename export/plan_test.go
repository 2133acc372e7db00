package export_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// fakeFor starts the fake with n agents and, when maxRows > 0, the
// default organization entitled to deliveries of maxRows agents.
func fakeFor(t *testing.T, n int, maxRows int64, opts ...lendgraphtest.Option) (*lendgraphtest.Server, *lendgraph.Client) {
	t.Helper()
	// Every record has a state unless a test says otherwise (WithMissingField).
	srv := lendgraphtest.NewServer(t, append([]lendgraphtest.Option{lendgraphtest.WithRows("agents", n), lendgraphtest.WithNoStateShare(0)}, opts...)...)
	if maxRows > 0 {
		srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: maxRows})
	}
	return srv, srv.Client()
}

func parquetReq() *lendgraph.DeliveryRequest {
	return &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet}
}

// countBy counts the fake's agents by the value of field ("" for none).
func countBy(srv *lendgraphtest.Server, field string) map[string]int64 {
	out := map[string]int64{}
	d := srv.Dataset()
	for i := range d.Len("agents") {
		v, _ := d.Summary("agents", i)[field].(string)
		out[v]++
	}
	return out
}

// noCharge fails the test when the fake ran a delivery job or debited credits.
func noCharge(t *testing.T, srv *lendgraphtest.Server) {
	t.Helper()
	if d := srv.Debits(lendgraphtest.DefaultOrg); len(d) > 0 {
		t.Errorf("planning debited credits: %+v", d)
	}
	for _, j := range srv.Jobs() {
		if j.State != "cancelled" {
			t.Errorf("planning left job %s %s", j.ID, j.State)
		}
	}
}

func TestPlanCoversTheQuery(t *testing.T) {
	srv, c := fakeFor(t, 3000, 2000)
	p, err := export.NewPlan(context.Background(), c.Agents, parquetReq(), &export.PlanOptions{By: []string{"state", "city"}})
	if err != nil {
		t.Fatal(err)
	}
	noCharge(t, srv)
	if p.Total != 3000 || p.EstimatedRows() != 3000 {
		t.Fatalf("total %d, shards hold %d; want 3000 both", p.Total, p.EstimatedRows())
	}
	if p.MaxRows != 2000 || p.MaxRowsFrom == "user" {
		t.Errorf("ceiling %d from %q; want 2000 learned from the service", p.MaxRows, p.MaxRowsFrom)
	}
	// 3000 agents over 12 states all fit under 2000: no second level.
	if strings.Join(p.By, ",") != "state" || strings.Join(p.ByRequested, ",") != "state,city" {
		t.Errorf("By %v (asked %v); want state only", p.By, p.ByRequested)
	}
	want := countBy(srv, "state")
	if len(p.Shards) != len(want) {
		t.Fatalf("%d shards, want one per state (%d)", len(p.Shards), len(want))
	}
	for _, s := range p.Shards {
		st := s.Keys[0].Value.(string)
		if s.Name != "state="+st || s.Rows != want[st] || s.File != s.Name+"/part-00000.parquet" {
			t.Errorf("shard %+v; want state=%s with %d rows", s, st, want[st])
		}
		if s.Request.FlatFilters["state"] != st {
			t.Errorf("shard %s filters %v", s.Name, s.Request.FlatFilters)
		}
	}
}

func TestPlanSplitsBigShardsBySecondKey(t *testing.T) {
	srv, c := fakeFor(t, 3000, 200)
	p, err := export.NewPlan(context.Background(), c.Agents, parquetReq(), &export.PlanOptions{By: []string{"state", "city"}})
	if err != nil {
		t.Fatal(err)
	}
	noCharge(t, srv)
	if strings.Join(p.By, ",") != "state,city" {
		t.Fatalf("By %v; want state,city", p.By)
	}
	var sum int64
	for _, s := range p.Shards {
		sum += s.Rows
		if len(s.Keys) != 2 || s.Rows > 200 || s.Rows == 0 {
			t.Errorf("shard %s: %d rows, keys %v", s.Name, s.Rows, s.Keys)
		}
	}
	if sum != 3000 {
		t.Errorf("shards hold %d rows, want 3000", sum)
	}
	if _, ok := p.Shard("state=CA/city=Los Angeles"); !ok {
		t.Errorf("no shard state=CA/city=Los Angeles in %d shards", len(p.Shards))
	}
}

func TestPlanCoverageFailsWhenRecordsLackTheKey(t *testing.T) {
	srv, c := fakeFor(t, 3000, 2000, lendgraphtest.WithMissingField("agents", "state", 50))
	_, err := export.NewPlan(context.Background(), c.Agents, parquetReq(), &export.PlanOptions{By: []string{"state"}})
	var ce *export.CoverageError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *CoverageError", err)
	}
	noCharge(t, srv)
	if ce.Total != 3000 || ce.Covered != 2940 || ce.Unattributed != 60 || ce.Field != "state" {
		t.Errorf("coverage error %+v; want 3000 matched, 2940 covered, 60 without a state", ce)
	}
	for _, want := range []string{"3000", "2940", "60", "PlanOptions.IncludeMissing"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if ce.Plan == nil {
		t.Error("the error carries no plan to inspect")
	}

	// With IncludeMissing the 60 land in a shard of their own.
	p, err := export.NewPlan(context.Background(), c.Agents, parquetReq(), &export.PlanOptions{By: []string{"state"}, IncludeMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	s, ok := p.Shard("state=" + export.MissingValue)
	if !ok || s.Rows != 60 {
		t.Fatalf("missing-state shard %+v; want 60 rows", s)
	}
	if p.EstimatedRows() != 3000 {
		t.Errorf("shards hold %d, want 3000", p.EstimatedRows())
	}
}

func TestPlanCoverageFailsOnOverlappingValues(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithRows("originators", 1000), lendgraphtest.WithNoStateShare(0))
	c := srv.Client()
	// states is a list: an originator licensed in two states matches two
	// shards. (The chart cannot slice by a list, so the values are given.)
	states := []any{"AZ", "CA", "CO", "FL", "GA", "IL", "NC", "NV", "NY", "OH", "TX", "WA"}
	_, err := export.NewPlan(context.Background(), c.Originators, parquetReq(),
		&export.PlanOptions{By: []string{"states"}, MaxRows: 1000, Values: map[string][]any{"states": states}})
	var ce *export.CoverageError
	if !errors.As(err, &ce) || ce.Covered <= ce.Total || ce.Total != 1000 {
		t.Fatalf("err = %v, want *CoverageError with more rows in shards than 1000", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprint(ce.Covered-ce.Total)) || !strings.Contains(err.Error(), "two shards") {
		t.Errorf("message %q does not say how many rows would land twice", err)
	}
}

func TestPlanShardTooBig(t *testing.T) {
	srv, c := fakeFor(t, 3000, 40)
	_, err := export.NewPlan(context.Background(), c.Agents, parquetReq(), &export.PlanOptions{By: []string{"state", "city"}})
	var big *export.ShardTooBigError
	if !errors.As(err, &big) {
		t.Fatalf("err = %v, want *ShardTooBigError", err)
	}
	noCharge(t, srv)
	if big.MaxRows != 40 || big.Rows <= 40 || !strings.Contains(big.Shard, "/city=") {
		t.Errorf("too big: %+v", big)
	}
	for _, want := range []string{big.Shard, fmt.Sprint(big.Rows), "40", "state,city"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
}

func TestPlanCeilingFromMaxRowsError(t *testing.T) {
	srv, c := fakeFor(t, 3000, 700)
	// A service whose limit validation does not say the ceiling: the
	// planner falls back to the whole query, refused with
	// delivery_exceeds_max_rows.
	srv.InjectFault("POST", "/v1/agents/bulk-delivery", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 400, Body: `{"error":"limit must be at or below the row ceiling"}`})
	p, err := export.NewPlan(context.Background(), c.Agents, parquetReq(), &export.PlanOptions{By: []string{"state"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxRows != 700 || p.MaxRowsFrom != "delivery_exceeds_max_rows" {
		t.Errorf("ceiling %d from %q; want 700 from delivery_exceeds_max_rows", p.MaxRows, p.MaxRowsFrom)
	}
	noCharge(t, srv)
}

func TestPlanCeilingWithoutEntitlement(t *testing.T) {
	srv, c := fakeFor(t, 14000, 0)
	srv.InjectFault("POST", "/v1/agents/bulk-delivery", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 400, Body: `{"error":"bad limit"}`})
	_, err := export.NewPlan(context.Background(), c.Agents, parquetReq(), &export.PlanOptions{By: []string{"state"}})
	var big *export.ShardTooBigError
	if !errors.As(err, &big) || big.MaxRows != 1000 {
		t.Fatalf("err = %v; want shards above the 1,000 rows of a delivery without entitlement", err)
	}
	noCharge(t, srv)
}

func TestPlanCancelsAnAcceptedProbe(t *testing.T) {
	srv, c := fakeFor(t, 3000, 5000, lendgraphtest.WithJobRate("delivery", 100))
	// A service that accepts an impossible limit: the probe starts a job,
	// which the planner cancels before it can complete.
	srv.InjectFault("POST", "/v1/agents/bulk-delivery", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 400, Body: `{"error":"bad limit"}`})
	p, err := export.NewPlan(context.Background(), c.Agents, parquetReq(), &export.PlanOptions{By: []string{"state"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxRows != 5000 || p.MaxRowsFrom != "job handle" || len(p.Notes) != 1 {
		t.Errorf("ceiling %d from %q, notes %q", p.MaxRows, p.MaxRowsFrom, p.Notes)
	}
	noCharge(t, srv)
}

func TestPlanValidation(t *testing.T) {
	_, c := fakeFor(t, 10, 0)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		req  *lendgraph.DeliveryRequest
		opts *export.PlanOptions
	}{
		"no format":        {&lendgraph.DeliveryRequest{}, &export.PlanOptions{By: []string{"state"}}},
		"limit":            {&lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 5}, &export.PlanOptions{By: []string{"state"}}},
		"no key":           {parquetReq(), &export.PlanOptions{}},
		"hidden key":       {parquetReq(), &export.PlanOptions{By: []string{"_x"}}},
		"slash in key":     {parquetReq(), &export.PlanOptions{By: []string{"a/b"}}},
		"key twice":        {parquetReq(), &export.PlanOptions{By: []string{"state", "state"}}},
		"negative maxRows": {parquetReq(), &export.PlanOptions{By: []string{"state"}, MaxRows: -1}},
	} {
		_, err := export.NewPlan(ctx, c.Agents, tc.req, tc.opts)
		var inv *lendgraph.InvalidArgumentError
		if !errors.As(err, &inv) {
			t.Errorf("%s: err = %v, want *InvalidArgumentError", name, err)
		}
	}
}

func TestPlanFileRoundTrip(t *testing.T) {
	_, c := fakeFor(t, 3000, 200)
	req := &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Fields: []string{"fullName", "state", "city"},
		AdvancedFilters: lendgraph.Gte("transactionCount", 10)}
	p, err := export.NewPlan(context.Background(), c.Agents, req, &export.PlanOptions{By: []string{"state", "city"}, CreditsPerRow: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if p.Request.Fields[0] != "id" {
		t.Errorf("fields %v: id was not added", p.Request.Fields)
	}
	if cr, ok := p.EstimatedCredits(); !ok || cr != float64(p.EstimatedRows())/2 {
		t.Errorf("estimated credits %v %v", cr, ok)
	}
	ctx := context.Background()
	dest := dirDest(t)
	if err := p.Write(ctx, dest); err != nil {
		t.Fatal(err)
	}
	q, err := export.ReadPlan(ctx, dest)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Shards) != len(p.Shards) || q.Shards[3].Name != p.Shards[3].Name || q.Shards[3].Request.AdvancedFilters == nil ||
		q.Shards[3].Request.AdvancedFilters.And[1].Value != p.Shards[3].Keys[1].Value || q.Digest != p.Digest {
		t.Errorf("plan changed through its file:\n%+v\n%+v", p.Shards[3], q.Shards[3])
	}
}

// TestPlanChangedIsRefused: a plan edited after planning (a shard's filter
// moved to another shard's value, a shard cut off, a plan put together by
// hand) does not decode, is refused by Run with nothing submitted, and a
// destination holding one is refused by Run, Commit and ReadManifest alike.
// The newcomer's edit (state=AZ to TX) charged 3,175 credits for a plan of
// 3,000 rows before the duplicate check caught it.
func TestPlanChangedIsRefused(t *testing.T) {
	srv, c := fakeFor(t, 3000, 0)
	ctx := context.Background()
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	az, _ := p.Shard("state=AZ")
	edits := map[string]func(*export.Plan){
		"a filter moved": func(q *export.Plan) {
			sh, _ := q.Shard("state=AZ")
			sh.Request.FlatFilters = map[string]any{"state": "TX"}
		},
		"a shard cut off": func(q *export.Plan) { q.Shards = q.Shards[:len(q.Shards)-1] },
		"rows lowered":    func(q *export.Plan) { q.Shards[0].Rows-- },
		"no digest":       func(q *export.Plan) { q.Digest = "" },
		"another digest": func(q *export.Plan) {
			other := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
			q.Digest = other.Digest
		},
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			var q export.Plan
			if err := json.Unmarshal(raw, &q); err != nil {
				t.Fatal(err)
			}
			edit(&q)
			// In memory: Run refuses it before anything is sent.
			srv.ResetRequests()
			if _, err := export.Run(ctx, c.Agents, &q, dirDest(t), nil); !errors.Is(err, export.ErrPlanChanged) {
				t.Errorf("Run: %v; want ErrPlanChanged", err)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("%d requests for a changed plan", n)
			}
			// Through JSON: it does not decode.
			b, _ := json.Marshal(&q)
			if err := json.Unmarshal(b, new(export.Plan)); !errors.Is(err, export.ErrPlanChanged) {
				t.Errorf("decoding: %v; want ErrPlanChanged", err)
			}
		})
	}
	// A file cut short does not decode either.
	if err := json.Unmarshal(raw[:len(raw)/2], new(export.Plan)); err == nil {
		t.Error("half a plan decoded")
	}
	// Edited in its destination, after a run of one shard: every later
	// step refuses it, and nothing more is submitted or charged.
	dir := t.TempDir()
	dest := openDest(t, dir)
	if _, err := export.Run(ctx, c.Agents, p, dest, &export.RunOptions{Shards: []string{az.Name}, WaitOptions: fastPoll}); err != nil {
		t.Fatal(err)
	}
	settle(t, srv)
	debits, _ := ledger(srv)
	edited := strings.Replace(readFile(t, filepath.Join(dir, export.PlanFile)), `"AZ"`, `"TX"`, 1)
	writeFile(t, filepath.Join(dir, export.PlanFile), edited)
	srv.ResetRequests()
	if _, err := export.ReadPlan(ctx, dest); !errors.Is(err, export.ErrPlanChanged) {
		t.Errorf("ReadPlan: %v", err)
	}
	if _, err := export.Run(ctx, c.Agents, p, dest, runOpts()); err == nil {
		t.Error("Run into a destination whose plan was edited")
	}
	if _, err := export.Commit(ctx, dest, nil); !errors.Is(err, export.ErrPlanChanged) {
		t.Errorf("Commit: %v", err)
	}
	if _, err := export.ReadManifest(ctx, dest); !errors.Is(err, export.ErrPlanChanged) {
		t.Errorf("ReadManifest: %v", err)
	}
	settle(t, srv)
	if n := submits(srv); n != 0 {
		t.Errorf("%d submits after the plan was edited", n)
	}
	if after, _ := ledger(srv); after != debits {
		t.Errorf("%d debits after the edit, %d before", after, debits)
	}
	// Cut short in its destination: ErrPlanChanged too, as documented.
	writeFile(t, filepath.Join(dir, export.PlanFile), string(raw[:len(raw)/2]))
	if _, err := export.ReadPlan(ctx, dest); !errors.Is(err, export.ErrPlanChanged) || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("ReadPlan of a plan cut short: %v", err)
	}
}
