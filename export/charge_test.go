package export_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// settle waits until every job the fake started has ended, so that each
// one that completes has been charged.
func settle(t *testing.T, srv *lendgraphtest.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.WaitJobs(ctx); err != nil {
		t.Fatalf("the fake's jobs did not end: %v", err)
	}
}

// ledger is what the fake charged for deliveries: the debits and their sum.
func ledger(srv *lendgraphtest.Server) (int, float64) {
	return srv.Charged(lendgraphtest.DefaultOrg, "delivery")
}

// TestRunNeverPaysTwiceOnASlowService reproduces issue 22's report at the
// fake's ledger: a service that answers submits slowly, many shards in
// flight at once, and a rerun. The run once cut such a submit with a
// timeout of its own (the answer was lost, the job was not), and the rerun
// submitted the shard again: every record was charged twice. No submit
// may be cut while ctx is live (RunOptions.SubmitTimeout is only the grace
// after ctx ends), so the ledger holds one charge a record.
func TestRunNeverPaysTwiceOnASlowService(t *testing.T) {
	srv, c := fakeFor(t, 1500, 0)
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	if len(p.Shards) < 20 {
		t.Fatalf("%d shards; the test wants many in flight", len(p.Shards))
	}
	// Every submit's answer comes a byte at a time: about half a second,
	// after the fake has created the job.
	srv.InjectFault("POST", "/v1/agents/bulk-delivery", lendgraphtest.Fault{Kind: lendgraphtest.Trickle, Delay: 3 * time.Millisecond, Times: -1})
	dir := t.TempDir()
	dest := openDest(t, dir)
	opts := runOpts()
	opts.Concurrency = export.MaxConcurrency
	opts.SubmitTimeout = 50 * time.Millisecond // far shorter than an answer
	for run := range 2 {
		res, err := export.Run(context.Background(), c.Agents, p, dest, opts)
		t.Logf("run %d: %d submitted, %d landed, %d uncertain: %v", run+1, res.Submitted, res.Landed, len(res.Uncertain), err)
		if err != nil {
			t.Errorf("run %d: %v", run+1, err)
		}
	}
	settle(t, srv)
	n, credits := ledger(srv)
	if n > len(p.Shards) || credits > float64(p.Total) {
		t.Fatalf("the fake charged %d deliveries, %v credits, for %d shards of %d records", n, credits, len(p.Shards), p.Total)
	}
	checkDataset(t, srv, p, dest, dirObjects(dir))
}

// TestRunLeavesAnUncertainShard: a submit whose answer is lost after the
// service acted (the connection cut mid-body) may have started a job that
// nobody can find. Reruns leave the shard, list it with the rows at stake
// and fail with an *UncertainError, so the ledger never holds more than
// one charge a record; only ResubmitUncertain submits it again.
func TestRunLeavesAnUncertainShard(t *testing.T) {
	srv, c := fakeFor(t, 900, 0)
	p, err := export.NewPlan(context.Background(), c.Agents, &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet},
		&export.PlanOptions{By: []string{"state"}, CreditsPerRow: 1.5})
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	dir := t.TempDir()
	dest := openDest(t, dir)
	srv.InjectFault("POST", "/v1/agents/bulk-delivery", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
	opts := runOpts()
	opts.Concurrency = 1
	res, err := export.Run(context.Background(), c.Agents, p, dest, opts)
	var re *export.RunError
	var ue *export.UncertainError
	if errors.As(err, &re) || !errors.As(err, &ue) || len(ue.Shards) != 1 {
		t.Fatalf("err = %v; want one uncertain shard, and no RunError telling to run again", err)
	}
	cut := ue.Shards[0].Shard
	sh, _ := p.Shard(cut)
	want := export.UncertainShard{Shard: cut, State: export.StateSubmitting, Jobs: 1, Rows: sh.Rows, Credits: 1.5 * float64(sh.Rows)}
	if len(res.Uncertain) != 1 || res.Uncertain[0] != want || res.UncertainRows != sh.Rows || res.UncertainCredits != want.Credits {
		t.Fatalf("uncertain %+v (%d rows, %v credits); want %+v", res.Uncertain, res.UncertainRows, res.UncertainCredits, want)
	}
	m, _ := export.ReadManifest(context.Background(), dest)
	if st, _ := m.Status(cut); st.State != export.StateSubmitting || st.JobID != "" {
		t.Fatalf("the cut submit is recorded as %+v; want submitting without a job id", st)
	}

	// Two reruns: the shard is left, and said so.
	for range 2 {
		res, err = export.Run(context.Background(), c.Agents, p, dest, opts)
		if errors.As(err, &re) || !errors.As(err, &ue) || len(ue.Shards) != 1 || ue.Shards[0] != want {
			t.Fatalf("rerun: %v; want only the uncertain shard", err)
		}
		stake := fmt.Sprintf("up to %d rows, %s credits", sh.Rows, strconv.FormatFloat(want.Credits, 'f', -1, 64))
		for _, w := range []string{cut, "ResubmitUncertain", "charged twice", stake} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("the error lacks %q: %v", w, err)
			}
		}
		if res.Complete || res.Landed != len(p.Shards)-1 || len(res.Uncertain) != 1 {
			t.Errorf("rerun result %+v", res)
		}
	}
	if n := submits(srv); n != len(p.Shards) {
		t.Errorf("%d submits for %d shards: a rerun submitted the uncertain shard", n, len(p.Shards))
	}
	settle(t, srv)
	if n, credits := ledger(srv); n != len(p.Shards) || credits != float64(p.Total) {
		t.Errorf("%d debits, %v credits; want one a shard, %d", n, credits, p.Total)
	}

	// With the user's say-so: submitted again, landed, and still reported.
	opts.ResubmitUncertain = true
	res, err = export.Run(context.Background(), c.Agents, p, dest, opts)
	if err != nil || !res.Complete || res.Submitted != 1 {
		t.Fatalf("resubmit: %+v, %v", res, err)
	}
	want.State = export.StateLanded
	if len(res.Uncertain) != 1 || res.Uncertain[0] != want || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "one more job") {
		t.Errorf("after the resubmit: uncertain %+v, warnings %q", res.Uncertain, res.Warnings)
	}
	m, _ = export.ReadManifest(context.Background(), dest)
	if st, _ := m.Status(cut); !st.Uncertain || st.Submits != 2 || st.Unanswered != 1 || st.State != export.StateLanded {
		t.Errorf("shard %s recorded as %+v", cut, st)
	}
	settle(t, srv)
	// The orphan job, which nobody knows, completed and was charged: the
	// cost the user accepted.
	if n, _ := ledger(srv); n != len(p.Shards)+1 {
		t.Errorf("%d debits; want one a shard and one for the orphan job", n)
	}
}

// TestRunSubmitGraceAfterInterrupt: a submit in flight when ctx ends gets
// RunOptions.SubmitTimeout to be answered and recorded; one that takes
// longer is left uncertain.
func TestRunSubmitGraceAfterInterrupt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace time.Duration
		want  export.ShardState
	}{
		{"answered within the grace", 5 * time.Second, export.StateSubmitted},
		{"not answered within it", 20 * time.Millisecond, export.StateSubmitting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, c := fakeFor(t, 300, 0)
			p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
			srv.InjectFault("POST", "/v1/agents/bulk-delivery", lendgraphtest.Fault{Kind: lendgraphtest.Trickle, Delay: 2 * time.Millisecond})
			dir := t.TempDir()
			dest := openDest(t, dir)
			opts := runOpts()
			opts.Concurrency, opts.SubmitTimeout = 1, tc.grace
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_, err := export.Run(ctx, c.Agents, p, dest, opts)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v", err)
			}
			m, _ := export.ReadManifest(context.Background(), dest)
			st, _ := m.Status(p.Shards[0].Name)
			if st.State != tc.want || (tc.want == export.StateSubmitted) != (st.JobID != "") {
				t.Errorf("the interrupted submit is recorded as %+v; want %s", st, tc.want)
			}
		})
	}
}

func TestRunConcurrencyCeiling(t *testing.T) {
	srv, c := fakeFor(t, 300, 0)
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	dest := dirDest(t)
	opts := runOpts()
	opts.Concurrency = export.MaxConcurrency + 1
	var inv *lendgraph.InvalidArgumentError
	if _, err := export.Run(context.Background(), c.Agents, p, dest, opts); !errors.As(err, &inv) || inv.Arg != "Concurrency" {
		t.Fatalf("err = %v; want an invalid Concurrency", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests before refusing the concurrency", n)
	}
}
