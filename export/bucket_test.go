package export_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/internal/miniotest"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// fileBucket is a bucket in a temporary directory (fileblob).
func fileBucket(t *testing.T) *blob.Bucket {
	t.Helper()
	b, err := fileblob.OpenBucket(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// minioFake starts MinIO and a fake with n agents entitled to deliveries of
// maxRows, whose delivery links are presigned links of MinIO, and opens
// the export's destination in the same MinIO by URL, as the CLI does: the
// credentials from the AWS environment variables.
func minioFake(t *testing.T, n int, maxRows int64, prefix string) (*lendgraphtest.Server, *lendgraph.Client, *blob.Bucket, string) {
	t.Helper()
	store := miniotest.Start(t)
	srv, c := fakeFor(t, n, maxRows, lendgraphtest.WithS3Store(store))
	t.Setenv("AWS_ACCESS_KEY_ID", store.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", store.SecretAccessKey)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	u := "s3://" + store.Bucket + "/" + prefix + "?endpoint=" + url.QueryEscape(store.Endpoint) + "&use_path_style=true"
	b, err := export.OpenBucket(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return srv, c, b, u
}

func bucketOpts(b *blob.Bucket) *export.RunOptions {
	return &export.RunOptions{Bucket: b, WaitOptions: fastPoll}
}

// checkBucketDataset checks a committed export in a bucket against the
// fake: _SUCCESS, a manifest whose every shard's sha256 is its object's,
// each shard charged once at the fake's ledger, and every agent read back
// once, straight from the store.
func checkBucketDataset(t *testing.T, srv *lendgraphtest.Server, p *export.Plan, b *blob.Bucket) {
	t.Helper()
	ctx := context.Background()
	if ok, err := b.Exists(ctx, export.SuccessFile); !ok || err != nil {
		t.Errorf("no _SUCCESS: %v", err)
	}
	data, err := b.ReadAll(ctx, export.ManifestFile)
	if err != nil {
		t.Fatal(err)
	}
	var m export.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) != len(p.Shards) {
		t.Fatalf("manifest of %d shards, plan of %d", len(m.Shards), len(p.Shards))
	}
	for _, s := range m.Shards {
		obj, err := b.ReadAll(ctx, s.File)
		if err != nil {
			t.Errorf("shard %s: %v", s.Name, err)
			continue
		}
		sum := sha256.Sum256(obj)
		if int64(len(obj)) != s.Bytes || hex.EncodeToString(sum[:]) != s.SHA256 || s.Rows == 0 || s.IDs == nil || s.IDs.Count != s.Rows {
			t.Errorf("shard %s: %+v, object of %d bytes", s.Name, s, len(obj))
		}
	}
	if v := m.Verification; v == nil || !v.Complete || v.LandedRows != p.Total || v.DuplicateIDs != 0 {
		t.Errorf("verification %+v", m.Verification)
	}
	// Only the plan's data files are part-* objects: nothing staged, no
	// second file in a partition.
	var parts int
	for obj, err := range listAll(ctx, b, "") {
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(obj, "/part-") {
			parts++
		}
		if strings.HasPrefix(obj, "_staging/") {
			t.Errorf("staged object left: %s", obj)
		}
	}
	if parts != len(p.Shards) {
		t.Errorf("%d part-* objects for %d shards", parts, len(p.Shards))
	}
	settle(t, srv)
	if debits, _ := ledger(srv); debits != len(p.Shards) {
		t.Errorf("the fake's ledger holds %d delivery debits for %d shards", debits, len(p.Shards))
	}
	seen := map[string]int{}
	for a, err := range export.BucketRows[lendgraph.Agent](ctx, b) {
		if err != nil {
			t.Fatal(err)
		}
		seen[a.ID]++
	}
	if len(seen) != srv.Dataset().Len("agents") {
		t.Errorf("read %d distinct ids from the bucket, the fake has %d agents", len(seen), srv.Dataset().Len("agents"))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("id %s read %d times", id, n)
		}
	}
}

// listAll yields the keys under prefix.
func listAll(ctx context.Context, b *blob.Bucket, prefix string) func(func(string, error) bool) {
	return func(yield func(string, error) bool) {
		it := b.List(&blob.ListOptions{Prefix: prefix})
		for {
			obj, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield("", err)
				return
			}
			if !yield(obj.Key, nil) {
				return
			}
		}
	}
}

func TestBucketRunLandsAndCommits(t *testing.T) {
	for _, f := range []lendgraph.Format{lendgraph.FormatParquet, lendgraph.FormatCSV, lendgraph.FormatNDJSON, lendgraph.FormatJSON} {
		t.Run(string(f), func(t *testing.T) {
			srv, c := fakeFor(t, 1200, 300)
			p := planAgents(t, srv, c, f, "state")
			b := fileBucket(t)
			res, err := export.Run(context.Background(), c.Agents, p, bucketOpts(b))
			if err != nil {
				t.Fatal(err)
			}
			if !res.Complete || res.Landed != len(p.Shards) || res.Submitted != len(p.Shards) || res.ChargedRows != 1200 {
				t.Errorf("result %+v", res)
			}
			checkBucketDataset(t, srv, p, b)

			// Again: every record matches its object; nothing is submitted.
			res, err = export.Run(context.Background(), c.Agents, p, bucketOpts(b))
			if err != nil || res.Skipped != len(p.Shards) || res.Submitted+res.Reattached+res.Redownloaded != 0 || !res.Complete {
				t.Errorf("second run: %+v, %v", res, err)
			}
			if n := submits(srv); n != len(p.Shards) {
				t.Errorf("%d submits for %d shards", n, len(p.Shards))
			}
		})
	}
}

// TestBucketMinIO runs the whole export against MinIO: the links are
// MinIO's presigned links, the destination is MinIO through s3blob, opened
// by URL with the credentials from the environment.
func TestBucketMinIO(t *testing.T) {
	srv, c, b, u := minioFake(t, 1200, 300, "exports/agents")
	p := planAgents(t, srv, c, lendgraph.FormatParquet, "state")
	res, err := export.Run(context.Background(), c.Agents, p, bucketOpts(b))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.Landed != len(p.Shards) {
		t.Errorf("result %+v", res)
	}
	checkBucketDataset(t, srv, p, b)
	// The URL's path is the prefix inside the bucket.
	whole, err := export.OpenBucket(context.Background(), strings.Replace(u, "/exports/agents?", "?", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	if ok, err := whole.Exists(context.Background(), "exports/agents/"+export.SuccessFile); !ok || err != nil {
		t.Errorf("no exports/agents/_SUCCESS in the bucket: %v", err)
	}
}

// TestBucketMinIOConditionalWrite: the claims rest on the store refusing
// a write with If-None-Match: * to a key that exists (S3 does since 2024;
// MinIO too). fileblob's check is not atomic (a stat, then a rename): the
// tests of two tasks at once run against MinIO.
func TestBucketMinIOConditionalWrite(t *testing.T) {
	_, _, b, _ := minioFake(t, 10, 0, "cond")
	ctx := context.Background()
	opts := &blob.WriterOptions{IfNotExist: true}
	if err := b.WriteAll(ctx, "_claims/00000.json", []byte("first"), opts); err != nil {
		t.Fatal(err)
	}
	err := b.WriteAll(ctx, "_claims/00000.json", []byte("second"), opts)
	// (gcerrors.Code alone may say NotFound: s3blob v0.46 takes any error
	// whose message holds "301", which a request id may, for a missing
	// bucket. The package checks the service's code too.)
	var coded interface{ ErrorCode() string }
	if gcerrors.Code(err) != gcerrors.FailedPrecondition && !(errors.As(err, &coded) && coded.ErrorCode() == "PreconditionFailed") {
		t.Fatalf("a second conditional write: %v", err)
	}
	if got, _ := b.ReadAll(ctx, "_claims/00000.json"); string(got) != "first" {
		t.Errorf("the claim holds %q", got)
	}
	// Many writers at once: exactly one wins.
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if b.WriteAll(ctx, "_claims/00001.json", []byte(fmt.Sprint(i)), opts) == nil {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("%d of 8 conditional writers won", wins.Load())
	}
}

// TestBucketTwoTasksForOneShard starts two tasks for the same shard at
// once, as an orchestrator's retry does while the first still runs: the
// conditional claim lets one submit; the other continues its job or
// leaves the shard to it (Result.Busy). One submit, one charge (counted
// at the fake's ledger), one object: two tasks in MinIO, and eight in a
// directory that each task opens on its own, as processes do (5 rounds).
func TestBucketTwoTasksForOneShard(t *testing.T) {
	t.Run("minio", func(t *testing.T) {
		srv, c, b, _ := minioFake(t, 600, 300, "two")
		tasksForOneShard(t, srv, c, b, b)
	})
	t.Run("directory", func(t *testing.T) {
		for range 5 {
			srv, c := fakeFor(t, 600, 300)
			dir := "file://" + t.TempDir()
			bs := make([]*blob.Bucket, 8)
			for i := range bs {
				b, err := export.OpenBucket(context.Background(), dir)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = b.Close() })
				bs[i] = b
			}
			tasksForOneShard(t, srv, c, bs...)
		}
	})
}

// tasksForOneShard runs a task for the first shard through each bucket
// value at once, and checks the outcome.
func tasksForOneShard(t *testing.T, srv *lendgraphtest.Server, c *lendgraph.Client, buckets ...*blob.Bucket) {
	t.Helper()
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	shard := p.Shards[0].Name
	var wg sync.WaitGroup
	n := len(buckets)
	results := make([]*export.Result, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i, b := range buckets {
		wg.Go(func() {
			<-start
			o := bucketOpts(b)
			o.Shards = []string{shard}
			results[i], errs[i] = export.Run(context.Background(), c.Agents, p, o)
		})
	}
	close(start)
	wg.Wait()
	settle(t, srv)
	if s := submits(srv); s != 1 {
		t.Errorf("%d tasks for one shard submitted %d times", n, s)
	}
	if debits, _ := ledger(srv); debits != 1 {
		t.Errorf("%d debits for one shard", debits)
	}
	landed := 0
	for i := range n {
		var ue *export.UncertainError
		switch {
		case errs[i] == nil && results[i].Landed == 1:
			landed++
		case errs[i] == nil && slices.Equal(results[i].Busy, []string{shard}):
			// The other task's claim, younger than StaleClaimAfter, had
			// no job id yet when read: the shard is left to it.
		case errors.As(errs[i], &ue):
			// The other task's claim had no job id yet when read.
		default:
			t.Errorf("task %d: %+v, %v", i, results[i], errs[i])
		}
	}
	if landed == 0 {
		t.Errorf("neither task landed the shard: %v", errs)
	}
	t.Logf("task results: %v; %d landed", errs, landed)
	// The rest of the export, then the commit, see one shard, one object.
	res, err := export.Run(context.Background(), c.Agents, p, bucketOpts(buckets[0]))
	if err != nil || !res.Complete {
		t.Fatalf("%+v, %v", res, err)
	}
	checkBucketDataset(t, srv, p, buckets[0])
}

// TestBucketClaimWithoutJobIsUncertain: a task that died between its
// submit and the record of the job id leaves a claim with no job. That is
// the one window where a shard may be charged twice: another task never
// submits it again unless ResubmitUncertain says so.
func TestBucketClaimWithoutJobIsUncertain(t *testing.T) {
	srv, c := fakeFor(t, 600, 300)
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	b := fileBucket(t)
	ctx := context.Background()
	if err := p.WriteBucket(ctx, b); err != nil {
		t.Fatal(err)
	}
	// What a task leaves when killed after its claim, before the job id.
	claim, _ := json.Marshal(export.ShardStatus{Name: p.Shards[0].Name, State: export.StateSubmitting, File: p.Shards[0].File, Submits: 1})
	if err := b.WriteAll(ctx, "_claims/00000.json", claim, nil); err != nil {
		t.Fatal(err)
	}
	res, err := export.Run(ctx, c.Agents, p, bucketOpts(b))
	var ue *export.UncertainError
	if !errors.As(err, &ue) || len(res.Uncertain) != 1 || res.Uncertain[0].Shard != p.Shards[0].Name || res.Complete {
		t.Fatalf("%+v, %v", res, err)
	}
	if n := submits(srv); n != len(p.Shards)-1 {
		t.Errorf("%d submits; the uncertain shard must not be submitted (%d shards)", n, len(p.Shards))
	}
	// With the user's say-so it is submitted again, and the export completes.
	o := bucketOpts(b)
	o.ResubmitUncertain = true
	res, err = export.Run(ctx, c.Agents, p, o)
	if err != nil || !res.Complete || res.Submitted != 1 || len(res.Warnings) == 0 {
		t.Fatalf("%+v, %v", res, err)
	}
	// The commit's account keeps what the lost submit may have charged.
	m, err := export.Commit(ctx, b, nil)
	if err != nil || m.Verification.UncertainRows != p.Shards[0].Rows {
		t.Fatalf("commit: %v; uncertain rows %+v, want the shard's %d", err, m.Verification, p.Shards[0].Rows)
	}
	checkBucketDataset(t, srv, p, b)
}

// TestBucketClaimWindowIsTheOnlyOne kills a task (cancels its context) at
// each step of a shard in turn: claimed, submitted, job recorded,
// streaming, landed. Only a kill between the claim and the job id's record
// leaves the shard uncertain (busy at first: until StaleClaimAfter, the
// claim may be a live task's); after every other the next run finishes it
// with no second submit and no second charge.
func TestBucketClaimWindowIsTheOnlyOne(t *testing.T) {
	steps := []struct {
		name      string
		at        func(e export.Event) bool
		uncertain bool
	}{
		{"after the submit was sent", nil, true},
		{"after the job id was recorded", func(e export.Event) bool { return e.Kind == export.EventSubmitted }, false},
		{"while streaming", func(e export.Event) bool { return e.Kind == export.EventDownloading }, false},
		{"after landing", func(e export.Event) bool { return e.Kind == export.EventLanded }, false},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			srv, c := fakeFor(t, 300, 300)
			p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
			b := fileBucket(t)
			ctx, cancel := context.WithCancel(context.Background())
			o := bucketOpts(b)
			o.Shards = []string{p.Shards[0].Name}
			if step.at == nil {
				// The submit reaches the service, its answer is lost.
				srv.InjectFault("POST", "/v1/agents/bulk-delivery", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
			} else {
				o.OnEvent = func(e export.Event) {
					if step.at(e) {
						cancel()
					}
				}
			}
			_, _ = export.Run(ctx, c.Agents, p, o)
			cancel()
			settle(t, srv)
			res, err := export.Run(context.Background(), c.Agents, p, bucketOpts(b))
			if step.uncertain {
				// At once, the claim may be a live task's, still waiting
				// on its answer: the shard is left to it, as busy.
				if err != nil || !slices.Equal(res.Busy, []string{p.Shards[0].Name}) || len(res.Uncertain) != 0 {
					t.Fatalf("want the shard busy: %+v, %v", res, err)
				}
				// Once the claim is stale, its task died mid-submit.
				o := bucketOpts(b)
				o.StaleClaimAfter = time.Nanosecond
				res, err = export.Run(context.Background(), c.Agents, p, o)
				var ue *export.UncertainError
				if !errors.As(err, &ue) || len(res.Uncertain) != 1 || res.Uncertain[0].Shard != p.Shards[0].Name {
					t.Fatalf("want the shard left uncertain: %+v, %v", res, err)
				}
				if n := submits(srv); n != len(p.Shards) {
					t.Errorf("%d submits for %d shards: the uncertain shard was submitted again", n, len(p.Shards))
				}
				return
			}
			if err != nil || !res.Complete {
				t.Fatalf("%+v, %v", res, err)
			}
			settle(t, srv)
			if n := submits(srv); n != len(p.Shards) {
				t.Errorf("%d submits for %d shards", n, len(p.Shards))
			}
			checkBucketDataset(t, srv, p, b)
		})
	}
}

// TestBucketCutUploadResumesWithoutNewCharge cuts the upload of a shard's
// file twice: the object never appears half-written, the file streams
// again from a fresh link of the same job, and the ledger holds one charge.
func TestBucketCutUploadResumesWithoutNewCharge(t *testing.T) {
	srv, c := fakeFor(t, 600, 300)
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	inner := fileBucket(t)
	cut := &cuttingBucket{b: inner, cuts: 2, after: 100}
	b := blob.NewBucket(cut)
	defer b.Close()
	var redownloads atomic.Int32
	o := bucketOpts(b)
	o.OnEvent = func(e export.Event) {
		if e.Kind == export.EventRedownload {
			redownloads.Add(1)
		}
	}
	res, err := export.Run(context.Background(), c.Agents, p, o)
	if err != nil || !res.Complete {
		t.Fatalf("%+v, %v", res, err)
	}
	if cut.cuts != 0 || redownloads.Load() != 2 {
		t.Errorf("%d cuts left, %d streams again", cut.cuts, redownloads.Load())
	}
	if n := submits(srv); n != len(p.Shards) {
		t.Errorf("%d submits for %d shards", n, len(p.Shards))
	}
	checkBucketDataset(t, srv, p, inner)
}

// TestCommitRefuses: a shard with no record, a record that does not match
// its object, and an id in two shards each stop Commit before _SUCCESS.
func TestCommitRefuses(t *testing.T) {
	ctx := context.Background()
	srv, c := fakeFor(t, 600, 300)
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	b := fileBucket(t)
	if _, err := export.Run(ctx, c.Agents, p, bucketOpts(b)); err != nil {
		t.Fatal(err)
	}
	committed := func() bool { ok, _ := b.Exists(ctx, export.SuccessFile); return ok }
	if !committed() {
		t.Fatal("no _SUCCESS after a complete run")
	}
	rec0, _ := b.ReadAll(ctx, "_shards/00000.json")

	// No record.
	if err := b.Delete(ctx, "_shards/00000.json"); err != nil {
		t.Fatal(err)
	}
	_, err := export.Commit(ctx, b, nil)
	var ce *export.CommitError
	if !errors.As(err, &ce) || len(ce.Missing) != 1 || ce.Missing[0] != p.Shards[0].Name || committed() {
		t.Fatalf("missing record: %v; _SUCCESS %v", err, committed())
	}

	// A record of other bytes than the object holds.
	var rec export.ShardStatus
	_ = json.Unmarshal(rec0, &rec)
	rec.Bytes++
	bad, _ := json.Marshal(rec)
	if err := b.WriteAll(ctx, "_shards/00000.json", bad, nil); err != nil {
		t.Fatal(err)
	}
	_, err = export.Commit(ctx, b, nil)
	if !errors.As(err, &ce) || len(ce.Mismatched) != 1 || committed() {
		t.Fatalf("mismatched record: %v", err)
	}
	if err := b.WriteAll(ctx, "_shards/00000.json", rec0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := export.Commit(ctx, b, nil); err != nil || !committed() {
		t.Fatalf("commit of the restored record: %v", err)
	}

	// A digest that no longer matches its data: an id of shard 0 in
	// shard 1's digest (rewritten with its record, consistently). The
	// data holds no id twice, which Commit finds out when it names it.
	d0 := digestOf(t, b, "_shards/00000.ids")
	d1 := digestOf(t, b, "_shards/00001.ids")
	d1[0] = d0[0]
	rewriteDigest(t, b, 1, d1)
	m, err := export.Commit(ctx, b, nil)
	var de *export.DuplicateError
	if !errors.As(err, &de) || de.Count != 1 || committed() || m.Verification.Complete || !strings.Contains(de.Examples[0].ID, "does not match its data") {
		t.Fatalf("a damaged digest: %v; _SUCCESS %v", err, committed())
	}
}

// TestCommitNamesDuplicatedIDs: a plan whose TX shard also asks for CA
// lands every Californian agent twice; Commit finds them from the digests
// and names them by id.
func TestCommitNamesDuplicatedIDs(t *testing.T) {
	for _, f := range []lendgraph.Format{lendgraph.FormatParquet, lendgraph.FormatCSV} {
		t.Run(string(f), func(t *testing.T) {
			srv, c := fakeFor(t, 1200, 0)
			p := planAgents(t, srv, c, f, "state")
			tx, _ := p.Shard("state=TX")
			tx.Request.FlatFilters = map[string]any{"state": []any{"TX", "CA"}}
			b := fileBucket(t)
			res, err := export.Run(context.Background(), c.Agents, p, bucketOpts(b))
			var de *export.DuplicateError
			ca := countBy(srv, "state")["CA"]
			if !errors.As(err, &de) || de.Count != ca || res.Complete {
				t.Fatalf("%v; want the %d CA agents twice", err, ca)
			}
			if ok, _ := b.Exists(context.Background(), export.SuccessFile); ok {
				t.Error("_SUCCESS over duplicates")
			}
			ids := map[string]bool{}
			for a, err := range export.BucketRows[lendgraph.Agent](context.Background(), b, export.AllowIncomplete()) {
				if err != nil {
					t.Fatal(err)
				}
				if a.State == "CA" {
					ids[a.ID] = true
				}
			}
			for _, e := range de.Examples {
				if !ids[e.ID] || !slices.Contains(e.Shards[:], "state=TX") || !slices.Contains(e.Shards[:], "state=CA") {
					t.Errorf("example %+v: want a CA agent's id in state=CA and state=TX", e)
				}
			}
		})
	}
}

// TestCommitWritesSuccessLast records the order of Commit's writes.
func TestCommitWritesSuccessLast(t *testing.T) {
	ctx := context.Background()
	srv, c := fakeFor(t, 600, 300)
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	inner := fileBucket(t)
	o := bucketOpts(inner)
	o.Shards = []string{p.Shards[0].Name}
	for _, s := range p.Shards {
		o.Shards = []string{s.Name}
		if _, err := export.Run(ctx, c.Agents, p, o); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := inner.Exists(ctx, export.SuccessFile); ok {
		t.Fatal("a run of chosen shards committed")
	}
	rec := &cuttingBucket{b: inner}
	b := blob.NewBucket(rec)
	defer b.Close()
	if _, err := export.Commit(ctx, b, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.writes); n < 2 || rec.writes[n-1] != export.SuccessFile || rec.writes[n-2] != export.ManifestFile {
		t.Errorf("writes %v: want the manifest, then _SUCCESS last", rec.writes)
	}
	checkBucketDataset(t, srv, p, inner)
}

func TestOpenBucketRefusesCredentialsInTheURL(t *testing.T) {
	_, err := export.OpenBucket(context.Background(), "s3://AKIAEXAMPLE:s3cr3t@bucket/prefix?region=x")
	var inv *lendgraph.InvalidArgumentError
	if !errors.As(err, &inv) || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "AKIAEXAMPLE") {
		t.Errorf("%v", err)
	}
	// A URL the driver refuses: its message repeated the query, an
	// endpoint's password included (newcomer trial).
	_, err = export.OpenBucket(context.Background(), "s3://b/x?bogus=1&endpoint=http://u:secretpw@h")
	if err == nil || strings.Contains(err.Error(), "secretpw") || strings.Contains(err.Error(), "bogus=1") || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("an unknown query parameter: %v", err)
	}
	if _, err := export.OpenBucket(context.Background(), "s3://"); !errors.As(err, &inv) {
		t.Errorf("s3:// (no bucket): %v", err)
	}
}

// digestOf reads a digest object's hashes.
func digestOf(t *testing.T, b *blob.Bucket, key string) []uint64 {
	t.Helper()
	data, err := b.ReadAll(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	hashes, err := export.DecodeIDDigest(data)
	if err != nil {
		t.Fatal(err)
	}
	return hashes
}

// rewriteDigest writes shard i's digest anew, and its record to match.
func rewriteDigest(t *testing.T, b *blob.Bucket, i int, hashes []uint64) {
	t.Helper()
	ctx := context.Background()
	data := export.EncodeIDDigest(hashes)
	key := fmt.Sprintf("_shards/%05d", i)
	if err := b.WriteAll(ctx, key+".ids", data, nil); err != nil {
		t.Fatal(err)
	}
	raw, err := b.ReadAll(ctx, key+".json")
	if err != nil {
		t.Fatal(err)
	}
	var rec export.ShardStatus
	_ = json.Unmarshal(raw, &rec)
	sum := sha256.Sum256(data)
	rec.IDs.SHA256, rec.IDs.Bytes = hex.EncodeToString(sum[:]), int64(len(data))
	raw, _ = json.Marshal(rec)
	if err := b.WriteAll(ctx, key+".json", raw, nil); err != nil {
		t.Fatal(err)
	}
}

// cuttingBucket is a blob driver over another bucket that cuts the first
// cuts uploads of data files (part-*) after `after` bytes, as a dropped
// connection to the store does, and records the keys written in order.
type cuttingBucket struct {
	b     *blob.Bucket
	after int

	mu     sync.Mutex
	cuts   int
	writes []string
}

var errCut = errors.New("the connection to the store was cut")

func (c *cuttingBucket) ErrorCode(err error) gcerrors.ErrorCode { return gcerrors.Code(err) }
func (c *cuttingBucket) As(any) bool                            { return false }
func (c *cuttingBucket) ErrorAs(error, any) bool                { return false }
func (c *cuttingBucket) Close() error                           { return nil }
func (c *cuttingBucket) Delete(ctx context.Context, key string) error {
	return c.b.Delete(ctx, key)
}
func (c *cuttingBucket) Copy(ctx context.Context, dst, src string, _ *driver.CopyOptions) error {
	return c.b.Copy(ctx, dst, src, nil)
}
func (c *cuttingBucket) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", errors.New("no signed URLs")
}

func (c *cuttingBucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	a, err := c.b.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{ContentType: a.ContentType, Metadata: a.Metadata, ModTime: a.ModTime, Size: a.Size, MD5: a.MD5, ETag: a.ETag}, nil
}

func (c *cuttingBucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	token := opts.PageToken
	if len(token) == 0 {
		token = blob.FirstPageToken
	}
	objs, next, err := c.b.ListPage(ctx, token, max(opts.PageSize, 1000), &blob.ListOptions{Prefix: opts.Prefix, Delimiter: opts.Delimiter})
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	page := &driver.ListPage{NextPageToken: next}
	for _, o := range objs {
		page.Objects = append(page.Objects, &driver.ListObject{Key: o.Key, ModTime: o.ModTime, Size: o.Size, MD5: o.MD5, IsDir: o.IsDir})
	}
	return page, nil
}

func (c *cuttingBucket) NewRangeReader(ctx context.Context, key string, off, n int64, _ *driver.ReaderOptions) (driver.Reader, error) {
	r, err := c.b.NewRangeReader(ctx, key, off, n, nil)
	if err != nil {
		return nil, err
	}
	return &rangeReader{r}, nil
}

type rangeReader struct{ r *blob.Reader }

func (r *rangeReader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r *rangeReader) Close() error               { return r.r.Close() }
func (r *rangeReader) As(any) bool                { return false }
func (r *rangeReader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{ContentType: r.r.ContentType(), ModTime: r.r.ModTime(), Size: r.r.Size()}
}

func (c *cuttingBucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	w, err := c.b.NewWriter(ctx, key, &blob.WriterOptions{ContentType: contentType, IfNotExist: opts.IfNotExist, Metadata: opts.Metadata})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cw := &cutWriter{w: w, key: key, c: c, left: -1}
	if strings.Contains(key, "/part-") && c.cuts > 0 {
		c.cuts--
		cw.left = c.after
	}
	return cw, nil
}

type cutWriter struct {
	w    *blob.Writer
	key  string
	c    *cuttingBucket
	left int // bytes before the cut; -1: no cut
	err  error
}

func (w *cutWriter) Write(p []byte) (int, error) {
	if w.left >= 0 && len(p) > w.left {
		w.err = errCut
		return 0, errCut
	}
	if w.left >= 0 {
		w.left -= len(p)
	}
	return w.w.Write(p)
}

func (w *cutWriter) Close() error {
	if w.err != nil {
		return errors.Join(w.err, w.w.Close())
	}
	if err := w.w.Close(); err != nil {
		return err
	}
	w.c.mu.Lock()
	w.c.writes = append(w.c.writes, w.key)
	w.c.mu.Unlock()
	return nil
}

// TestOpenBucketWritesFilesBesideThemselves: a file:// destination writes
// each file's temporary file beside it, not in $TMPDIR, whose rename into a
// directory on another file system (a tmpfs /tmp, a mounted volume) failed
// with "invalid cross-device link". Here $TMPDIR cannot hold a file at all.
func TestOpenBucketWritesFilesBesideThemselves(t *testing.T) {
	dir := t.TempDir()
	notADir := dir + "/tmpdir-is-a-file"
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b, err := export.OpenBucket(ctx, "file://"+dir+"/store")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	t.Setenv("TMPDIR", notADir)
	if err := b.WriteAll(ctx, "_claims/00000.json", []byte("{}\n"), &blob.WriterOptions{IfNotExist: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(dir + "/store/_claims/00000.json"); err != nil || string(got) != "{}\n" {
		t.Fatalf("%q, %v", got, err)
	}
	if left, _ := filepath.Glob(dir + "/store/_claims/*.tmp"); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// TestCommitRemovesTemporaryFiles: the temporary file of a writer killed
// mid-write in a file:// destination (fileblob writes beside the final
// name) is removed by Commit, so that a reader of the directory does not
// take it for data; other files stay.
func TestCommitRemovesTemporaryFiles(t *testing.T) {
	ctx := context.Background()
	srv, c := fakeFor(t, 600, 300)
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	dir := t.TempDir()
	b, err := export.OpenBucket(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := export.Run(ctx, c.Agents, p, bucketOpts(b)); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, filepath.FromSlash(p.Shards[0].File))
	stray := []string{data + ".18ec1f1221a40c72.tmp", filepath.Join(dir, "_claims", "00001.json.18ec1f1221a40c73.tmp")}
	kept := []string{filepath.Join(dir, "notes.tmp"), filepath.Join(dir, "README.txt")}
	for _, f := range append(stray, kept...) {
		if err := os.WriteFile(f, []byte("id,fullName\nx,half a row"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := export.Commit(ctx, b, nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range stray {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s: still there (%v)", f, err)
		}
	}
	for _, f := range kept {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if ok, _ := b.Exists(ctx, export.SuccessFile); !ok {
		t.Error("no _SUCCESS")
	}
}
