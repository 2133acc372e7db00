package export_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func TestResumeAfterCancelAtRandomPoints(t *testing.T) {
	srv, c := fakeFor(t, 1200, 80, lendgraphtest.WithJobRate("delivery", 2000))
	p := planAgents(t, srv, c, lendgraph.FormatParquet, "state", "city")
	dir := t.TempDir()
	dest := openDest(t, dir)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	// Forty runs cut at random moments, then one left to finish: how far
	// the cut runs got differs from machine to machine (a full run takes
	// about 3 s, 15 s under the race detector), so the test bounds the
	// rounds, not the time.
	const rounds = 40
	for round := range rounds {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+rng.IntN(600))*time.Millisecond)
		opts := runOpts()
		opts.Concurrency = 1 + rng.IntN(6)
		res, err := export.Run(ctx, c.Agents, p, dest, opts)
		cancel()
		if err == nil {
			if !res.Complete || len(res.Warnings) != 0 {
				t.Fatalf("round %d ended: %+v", round, res)
			}
			continue
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	res, err := export.Run(context.Background(), c.Agents, p, dest, runOpts())
	if err != nil || !res.Complete || len(res.Warnings) != 0 {
		t.Fatalf("final run: %+v, %v", res, err)
	}
	t.Logf("after %d cut runs the last one skipped %d landed shards, re-attached to %d jobs", rounds, res.Skipped, res.Reattached)
	if n := submits(srv); n != len(p.Shards) {
		t.Errorf("%d submits for %d shards: a shard was submitted twice", n, len(p.Shards))
	}
	m, _ := export.ReadManifest(context.Background(), dest)
	for _, s := range m.Shards {
		if s.Submits != 1 || s.Uncertain {
			t.Errorf("shard %s: %d submits recorded, uncertain %v", s.Name, s.Submits, s.Uncertain)
		}
	}
	// checkDataset counts the debits at the fake: one a shard, one credit a row.
	checkDataset(t, srv, p, dest, dirObjects(dir))
}

func TestResumeRedownloadsDamagedFiles(t *testing.T) {
	srv, c := fakeFor(t, 1500, 0)
	p := planAgents(t, srv, c, lendgraph.FormatParquet, "state")
	dir := t.TempDir()
	dest := openDest(t, dir)
	if _, err := export.Run(context.Background(), c.Agents, p, dest, runOpts()); err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "state=TX", "part-00000.parquet")
	fi, err := os.Stat(truncated)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(truncated, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "state=CA", "part-00000.parquet")); err != nil {
		t.Fatal(err)
	}
	// Same size, other bytes: only the sha256 tells.
	flipped := filepath.Join(dir, "state=NY", "part-00000.parquet")
	b, _ := os.ReadFile(flipped)
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(flipped, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// The links signed at the first run have expired by now.
	srv.Advance(2 * time.Hour)
	srv.ResetRequests()
	res, err := export.Run(context.Background(), c.Agents, p, dest, runOpts())
	if err != nil {
		t.Fatal(err)
	}
	if res.Redownloaded != 3 || res.Submitted != 0 || res.Skipped != len(p.Shards)-3 || !res.Complete {
		t.Errorf("result %+v; want 3 downloaded again, nothing submitted", res)
	}
	if n := submits(srv); n != 0 {
		t.Errorf("%d submits: a damaged file was fixed with a new job", n)
	}
	if n := srv.CountRequests("GET", "/objects/*"); n != 3 {
		t.Errorf("%d downloads, want 3", n)
	}
	checkDataset(t, srv, p, dest, dirObjects(dir))
}

func TestRunOneShardAlone(t *testing.T) {
	srv, c := fakeFor(t, 1500, 0)
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	// The plan goes through its destination, as it would to the tasks of
	// a workflow.
	dir := t.TempDir()
	if err := p.Write(context.Background(), openDest(t, dir)); err != nil {
		t.Fatal(err)
	}
	dest := openDest(t, dir)
	q, err := export.ReadPlan(context.Background(), dest)
	if err != nil {
		t.Fatal(err)
	}
	one := q.Shards[2]
	opts := runOpts()
	opts.Shards = []string{one.Name}
	res, err := export.Run(context.Background(), c.Agents, q, dest, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Complete || res.Landed != 1 || len(res.Pending) != len(q.Shards)-1 || res.Submitted != 1 {
		t.Errorf("result %+v", res)
	}
	if n := submits(srv); n != 1 {
		t.Errorf("%d submits, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(dir, export.SuccessFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("_SUCCESS after one shard of %d", len(q.Shards))
	}
	var n int64
	for a, err := range export.Rows[lendgraph.Agent](context.Background(), dest, export.AllowIncomplete()) {
		if err != nil {
			t.Fatal(err)
		}
		if a.State != one.Keys[0].Value {
			t.Errorf("row of %s in shard %s", a.State, one.Name)
		}
		n++
	}
	if n != one.Rows {
		t.Errorf("read %d rows, the shard has %d", n, one.Rows)
	}

	// Two tasks run two more shards at once into the same directory.
	var wg sync.WaitGroup
	for _, sh := range q.Shards[3:5] {
		wg.Go(func() {
			o := runOpts()
			o.Shards = []string{sh.Name}
			if _, err := export.Run(context.Background(), c.Agents, q, dest, o); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	m, _ := export.ReadManifest(context.Background(), dest)
	landed := 0
	for _, s := range m.Shards {
		if s.State == export.StateLanded {
			landed++
		}
	}
	if landed != 3 {
		t.Errorf("%d shards landed after three tasks; the manifest lost one", landed)
	}

	// The whole export then submits only the rest.
	res, err = export.Run(context.Background(), c.Agents, q, dest, runOpts())
	if err != nil {
		t.Fatal(err)
	}
	if res.Submitted != len(q.Shards)-3 || res.Skipped != 3 || !res.Complete {
		t.Errorf("result %+v", res)
	}
	checkDataset(t, srv, q, dest, dirObjects(dir))

	opts.Shards = []string{"state=ZZ"}
	var inv *lendgraph.InvalidArgumentError
	if _, err := export.Run(context.Background(), c.Agents, q, dest, opts); !errors.As(err, &inv) {
		t.Errorf("unknown shard: err = %v", err)
	}
}

func TestRunResubmitsOnlyFailedShards(t *testing.T) {
	srv, c := fakeFor(t, 1500, 0)
	p := planAgents(t, srv, c, lendgraph.FormatParquet, "state")
	dir := t.TempDir()
	dest := openDest(t, dir)
	srv.FailNextDelivery("storage unavailable")
	opts := runOpts()
	opts.Concurrency = 1
	res, err := export.Run(context.Background(), c.Agents, p, dest, opts)
	var re *export.RunError
	if !errors.As(err, &re) || len(re.Failed) != 1 || !errors.Is(err, lendgraph.ErrJobFailed) {
		t.Fatalf("err = %v; want one failed shard", err)
	}
	failed := re.Failed[0].Shard
	if res.Complete || res.Landed != len(p.Shards)-1 {
		t.Errorf("result %+v", res)
	}
	m, _ := export.ReadManifest(context.Background(), dest)
	if st, _ := m.Status(failed); st.State != export.StatePending || st.JobID != "" {
		t.Errorf("failed shard recorded as %+v; want pending again (no job charges it)", st)
	}
	if f := re.Failed[0]; f.JobID == "" || !strings.Contains(f.Err.Error(), "storage unavailable") {
		t.Errorf("failure %+v", f)
	}
	res, err = export.Run(context.Background(), c.Agents, p, dest, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Submitted != 1 || res.Skipped != len(p.Shards)-1 || !res.Complete {
		t.Errorf("rerun %+v; want only %s submitted", res, failed)
	}
	if n := submits(srv); n != len(p.Shards)+1 {
		t.Errorf("%d submits; want one a shard plus one for %s", n, failed)
	}
	checkDataset(t, srv, p, dest, dirObjects(dir)) // the failed job was not charged
}

func TestRunStopsSubmittingWhenCreditsRunOut(t *testing.T) {
	srv, c := fakeFor(t, 1500, 0)
	p := planAgents(t, srv, c, lendgraph.FormatParquet, "state")
	srv.SetCredits(lendgraphtest.DefaultOrg, float64(p.Shards[0].Rows+p.Shards[1].Rows))
	dest := dirDest(t)
	opts := runOpts()
	opts.Concurrency = 1
	res, err := export.Run(context.Background(), c.Agents, p, dest, opts)
	var ice *lendgraph.InsufficientCreditsError
	if !errors.As(err, &ice) {
		t.Fatalf("err = %v, want *InsufficientCreditsError", err)
	}
	if res.Landed != 2 || submits(srv) != 3 {
		t.Errorf("landed %d with %d submits; want 2 landed and no submit after the 402", res.Landed, submits(srv))
	}
}

func TestRunRefusesAnotherPlansDirectory(t *testing.T) {
	srv, c := fakeFor(t, 600, 0)
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	q := planAgents(t, srv, c, lendgraph.FormatParquet, "state")
	dir := t.TempDir()
	dest := openDest(t, dir)
	opts := runOpts()
	opts.Shards = []string{p.Shards[0].Name}
	if _, err := export.Run(context.Background(), c.Agents, p, dest, opts); err != nil {
		t.Fatal(err)
	}
	var pm *export.PlanMismatchError
	if _, err := export.Run(context.Background(), c.Agents, q, dest, runOpts()); !errors.As(err, &pm) {
		t.Errorf("err = %v, want *PlanMismatchError", err)
	}
}

// TestResumeAfterAStopMidDownload: a run stopped in the middle of a
// download leaves nothing under the file's name and no temporary file;
// the next run streams the file again from the same job, with no new job
// and no new charge.
func TestResumeAfterAStopMidDownload(t *testing.T) {
	srv, c := fakeFor(t, 1500, 0)
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	dir := t.TempDir()
	dest := openDest(t, dir)
	srv.InjectFault("GET", "/objects/{key...}", lendgraphtest.Fault{Kind: lendgraphtest.Throttle, Rate: 8 << 10, Times: -1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := runOpts()
	opts.Concurrency = 1
	var cut atomic.Int64 // bytes of the download the first run was stopped in
	var shard atomic.Value
	opts.OnEvent = func(e export.Event) {
		if e.Kind == export.EventDownloading && e.Downloaded >= 2<<10 && cut.CompareAndSwap(0, e.Downloaded) {
			shard.Store(e.Shard)
			cancel()
		}
	}
	if _, err := export.Run(ctx, c.Agents, p, dest, opts); !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v", err)
	}
	if cut.Load() == 0 {
		t.Fatal("the first run was not stopped mid-download")
	}
	keys, err := dirObjects(dir).list()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.HasPrefix(k, shard.Load().(string)+"/") {
			t.Errorf("left after a stop mid-download: %s", k)
		}
	}
	srv.ClearFaults()
	srv.ResetRequests()
	res, err := export.Run(context.Background(), c.Agents, p, dest, runOpts())
	if err != nil || !res.Complete || res.Reattached != 1 {
		t.Fatalf("second run: %+v, %v", res, err)
	}
	if n := submits(srv); n != len(p.Shards)-1-res.Skipped {
		t.Errorf("%d submits in the second run for %d shards, one re-attached and %d landed", n, len(p.Shards), res.Skipped)
	}
	checkDataset(t, srv, p, dest, dirObjects(dir))
}
