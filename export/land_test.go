package export_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"gocloud.dev/blob"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// TestLandingThatNeverSucceedsLeavesNothing: a shard whose every landing
// attempt fails (its upload cut each time; in a directory, its download)
// leaves no file under its final name, no temporary or staged file, and no
// record: the writer is aborted (in a bucket its context cancelled before
// Close) every time. Its job stays in its claim, so the next run lands it
// with no second submit.
func TestLandingThatNeverSucceedsLeavesNothing(t *testing.T) {
	for _, f := range []lendgraph.Format{lendgraph.FormatCSV, lendgraph.FormatParquet} {
		t.Run("bucket/"+string(f), func(t *testing.T) {
			srv, c := fakeFor(t, 600, 300)
			p := planAgents(t, srv, c, f, "state")
			inner, _ := memBucket(t)
			cut := &cuttingBucket{b: inner, cuts: 3, after: 100, only: p.Shards[0].File}
			st := export.BucketStorage(blob.NewBucket(cut), "cutting")
			defer st.Close()
			checkNothingLanded(t, srv, c, p, st, bucketObjects{inner}, func() { cut.cuts = 0 })
		})
	}
	t.Run("dir", func(t *testing.T) {
		srv, c := fakeFor(t, 600, 300)
		p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
		dir := t.TempDir()
		// Every download of the first shard's file is cut mid-body, on
		// every range, until the faults are cleared.
		srv.InjectFault("GET", "/objects/{key...}", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody, Times: -1})
		o := runOpts()
		o.Shards = []string{p.Shards[0].Name}
		if _, err := export.Run(context.Background(), c.Agents, p, openDest(t, dir), o); err == nil {
			t.Fatal("the landing of a file whose every download is cut succeeded")
		}
		srv.ClearFaults()
		checkNothingLanded(t, srv, c, p, openDest(t, dir), dirObjects(dir), nil)
	})
}

// checkNothingLanded runs the first shard of p alone (when fix is set; a
// test that ran it already passes nil), checks that it failed leaving
// nothing of its file and no record, then calls fix and checks that the
// export completes with no second submit.
func checkNothingLanded(t *testing.T, srv *lendgraphtest.Server, c *lendgraph.Client, p *export.Plan, st *export.Storage, obj objects, fix func()) {
	t.Helper()
	sh := p.Shards[0]
	if fix != nil {
		o := runOpts()
		o.Shards = []string{sh.Name}
		_, err := export.Run(context.Background(), c.Agents, p, st, o)
		var re *export.RunError
		if !errors.As(err, &re) || len(re.Failed) != 1 || re.Failed[0].JobID == "" {
			t.Fatalf("%v; want the shard failed, its job kept", err)
		}
	}
	keys, err := obj.list()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.HasPrefix(k, sh.Name+"/") || strings.HasPrefix(k, "_staging/") || k == shardFile(p, sh.Name, ".json") || k == shardFile(p, sh.Name, ".ids") {
			t.Errorf("left after every landing attempt failed: %s", k)
		}
	}
	if fix != nil {
		fix()
	}
	res, err := export.Run(context.Background(), c.Agents, p, st, runOpts())
	if err != nil || !res.Complete || res.Reattached != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	if n := submits(srv); n != len(p.Shards) {
		t.Errorf("%d submits for %d shards", n, len(p.Shards))
	}
	checkDataset(t, srv, p, st, obj)
}

// TestRowCountMismatchFailsWithoutASecondSubmit: a delivered file whose
// rows are not the job's charged rows is streamed again from the same job
// (three times), then fails the shard: nothing lands, and neither that run
// nor the next submits the shard again.
func TestRowCountMismatchFailsWithoutASecondSubmit(t *testing.T) {
	for name, open := range destinations(t) {
		t.Run(name, func(t *testing.T) {
			srv, c := fakeFor(t, 600, 0)
			p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
			sh := p.Shards[0]
			src := &scripted{AgentsService: c.Agents, deliver: func(req *lendgraph.DeliveryRequest) ([]lendgraph.Agent, []lendgraph.DeliveryStatus, bool) {
				if stateOf(req) != sh.Keys[0].Value {
					return nil, nil, false
				}
				rows := agentsIn(t, c, stateOf(req))
				charged := int64(len(rows) + 1)
				return rows, []lendgraph.DeliveryStatus{{Status: lendgraph.JobCompleted, Processed: charged, EstimatedTotal: charged, ChargedCount: &charged}}, true
			}}
			st, obj := open(t)
			redownloads := 0
			o := runOpts()
			o.OnEvent = func(e export.Event) {
				if e.Kind == export.EventRedownload && e.Shard == sh.Name {
					redownloads++
				}
			}
			_, err := export.Run(context.Background(), src, p, st, o)
			var re *export.RunError
			if !errors.As(err, &re) || len(re.Failed) != 1 || re.Failed[0].Shard != sh.Name || !strings.Contains(err.Error(), fmt.Sprintf("holds %d rows but job", sh.Rows)) {
				t.Fatalf("%v; want shard %s failed on its row count", err, sh.Name)
			}
			if redownloads != 2 {
				t.Errorf("%d downloads again; want 2 (three attempts)", redownloads)
			}
			if n := src.submitted(); n != len(p.Shards) {
				t.Errorf("%d submits for %d shards", n, len(p.Shards))
			}
			if _, err := obj.read(sh.File); err == nil {
				t.Error("the file landed")
			}
			if _, err := export.Run(context.Background(), src, p, st, runOpts()); err == nil {
				t.Error("the second run landed it")
			}
			if n := src.submitted(); n != len(p.Shards) {
				t.Errorf("%d submits after the second run for %d shards: the shard was submitted again", n, len(p.Shards))
			}
		})
	}
}

// TestLargeDigestIsAnObjectOfItsOwn: the id digest of a shard of many rows
// is an object beside its record (a small one is kept in the record);
// Commit reads it, and refuses a dataset whose digest object is gone.
func TestLargeDigestIsAnObjectOfItsOwn(t *testing.T) {
	for name, open := range destinations(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			srv, c := fakeFor(t, 6000, 0)
			p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
			st, obj := open(t)
			if _, err := export.Run(ctx, c.Agents, p, st, runOpts()); err != nil {
				t.Fatal(err)
			}
			m, err := export.ReadManifest(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			var large, small *export.ShardStatus
			for i := range m.Shards {
				switch s := &m.Shards[i]; {
				case s.IDs.Object != "" && s.IDs.Data == nil:
					large = s
				case s.IDs.Object == "" && len(s.IDs.Data) > 0:
					small = s
				}
			}
			if large == nil || small == nil {
				t.Fatalf("want a shard with its digest in an object and one with it in its record: %+v", m.Shards)
			}
			checkDataset(t, srv, p, st, obj)
			mustDo(t, obj.remove(large.IDs.Object))
			if _, err := export.Commit(ctx, st, nil); err == nil || !strings.Contains(err.Error(), large.Name) {
				t.Errorf("commit without shard %s's digest: %v", large.Name, err)
			}
		})
	}
}
