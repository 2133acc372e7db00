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
	_ "gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/internal/miniotest"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// minioFake starts MinIO and a fake with n agents entitled to deliveries of
// maxRows, whose delivery links are presigned links of MinIO, and opens
// the export's destination in the same MinIO by URL, as the CLI does: the
// credentials from the AWS environment variables. raw is the bucket under
// the same prefix, for the test's own reads and writes.
func minioFake(t *testing.T, n int, maxRows int64, prefix string) (srv *lendgraphtest.Server, c *lendgraph.Client, st *export.Storage, raw *blob.Bucket, u string) {
	t.Helper()
	store := miniotest.Start(t)
	srv, c = fakeFor(t, n, maxRows, lendgraphtest.WithS3Store(store))
	t.Setenv("AWS_ACCESS_KEY_ID", store.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", store.SecretAccessKey)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	q := "?endpoint=" + url.QueryEscape(store.Endpoint) + "&use_path_style=true"
	u = "s3://" + store.Bucket + "/" + prefix + q
	st = openDest(t, u)
	root, err := blob.OpenBucket(context.Background(), "s3://"+store.Bucket+q)
	if err != nil {
		t.Fatal(err)
	}
	raw = blob.PrefixedBucket(root, prefix+"/")
	t.Cleanup(func() { _ = raw.Close() })
	return srv, c, st, raw, u
}

// destinations are the storages a test runs in: a directory, and a bucket
// (memblob): each with the test's raw view of its objects.
func destinations(t *testing.T) map[string]func(t *testing.T) (*export.Storage, objects) {
	return map[string]func(t *testing.T) (*export.Storage, objects){
		"dir": func(t *testing.T) (*export.Storage, objects) {
			dir := t.TempDir()
			return openDest(t, dir), dirObjects(dir)
		},
		"bucket": func(t *testing.T) (*export.Storage, objects) {
			b, st := memBucket(t)
			return st, bucketObjects{b}
		},
	}
}

func TestRunLandsAndCommitsInEveryStorage(t *testing.T) {
	for name, open := range destinations(t) {
		for _, f := range []lendgraph.Format{lendgraph.FormatParquet, lendgraph.FormatCSV, lendgraph.FormatNDJSON, lendgraph.FormatJSON} {
			t.Run(name+"/"+string(f), func(t *testing.T) {
				srv, c := fakeFor(t, 1200, 300)
				p := planAgents(t, srv, c, f, "state")
				st, obj := open(t)
				res, err := export.Run(context.Background(), c.Agents, p, st, runOpts())
				if err != nil {
					t.Fatal(err)
				}
				if !res.Complete || res.Landed != len(p.Shards) || res.Submitted != len(p.Shards) || res.ChargedRows != 1200 {
					t.Errorf("result %+v", res)
				}
				checkDataset(t, srv, p, st, obj)

				// Again: every record matches its file; nothing is submitted.
				res, err = export.Run(context.Background(), c.Agents, p, st, runOpts())
				if err != nil || res.Skipped != len(p.Shards) || res.Submitted+res.Reattached+res.Redownloaded != 0 || !res.Complete {
					t.Errorf("second run: %+v, %v", res, err)
				}
				if n := submits(srv); n != len(p.Shards) {
					t.Errorf("%d submits for %d shards", n, len(p.Shards))
				}
			})
		}
	}
}

// TestMinIO runs the whole export against MinIO: the links are MinIO's
// presigned links, the destination is MinIO through s3blob, opened by URL
// with the credentials from the environment, under the URL's prefix.
func TestMinIO(t *testing.T) {
	srv, c, st, raw, _ := minioFake(t, 1200, 300, "exports/agents")
	p := planAgents(t, srv, c, lendgraph.FormatParquet, "state")
	res, err := export.Run(context.Background(), c.Agents, p, st, runOpts())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.Landed != len(p.Shards) {
		t.Errorf("result %+v", res)
	}
	checkDataset(t, srv, p, st, bucketObjects{raw})
}

// TestMinIOConditionalWrite: the claims rest on the store refusing a write
// with If-None-Match: * to a key that exists (S3 does since 2024; MinIO
// too).
func TestMinIOConditionalWrite(t *testing.T) {
	_, _, _, b, _ := minioFake(t, 10, 0, "cond")
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

// TestTwoTasksForOneShard starts tasks for the same shard at once, as an
// orchestrator's retry does while the first still runs: the exclusive
// claim lets one submit; the others continue its job or leave the shard
// to it (Result.Busy). One submit, one charge (counted at the fake's
// ledger), one file: two tasks in MinIO, and eight in a directory that
// each task opens on its own, as processes do (5 rounds).
func TestTwoTasksForOneShard(t *testing.T) {
	t.Run("minio", func(t *testing.T) {
		srv, c, st, raw, u := minioFake(t, 600, 300, "two")
		tasksForOneShard(t, srv, c, bucketObjects{raw}, st, openDest(t, u))
	})
	t.Run("directory", func(t *testing.T) {
		for range 5 {
			srv, c := fakeFor(t, 600, 300)
			dir := t.TempDir()
			sts := make([]*export.Storage, 8)
			for i := range sts {
				sts[i] = openDest(t, dir)
			}
			tasksForOneShard(t, srv, c, dirObjects(dir), sts...)
		}
	})
}

// tasksForOneShard runs a task for the first shard through each storage
// value at once, and checks the outcome.
func tasksForOneShard(t *testing.T, srv *lendgraphtest.Server, c *lendgraph.Client, obj objects, sts ...*export.Storage) {
	t.Helper()
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	shard := p.Shards[0].Name
	var wg sync.WaitGroup
	n := len(sts)
	results := make([]*export.Result, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i, st := range sts {
		wg.Go(func() {
			<-start
			o := runOpts()
			o.Shards = []string{shard}
			results[i], errs[i] = export.Run(context.Background(), c.Agents, p, st, o)
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
		case errs[i] == nil && slices.Equal(results[i].Busy, []string{shard}):
			// Another task held the shard (a directory's lock), or its
			// claim, younger than StaleClaimAfter, had no job id yet.
		case errs[i] == nil && !slices.Contains(results[i].Pending, shard):
			landed++
		case errors.As(errs[i], &ue):
			// The other task's claim had no job id yet when read.
		default:
			t.Errorf("task %d: %+v, %v", i, results[i], errs[i])
		}
	}
	if landed == 0 {
		t.Errorf("no task landed the shard: %v", errs)
	}
	t.Logf("task results: %v; %d landed", errs, landed)
	// The rest of the export, then the commit, see one shard, one file.
	res, err := export.Run(context.Background(), c.Agents, p, sts[0], runOpts())
	if err != nil || !res.Complete {
		t.Fatalf("%+v, %v", res, err)
	}
	checkDataset(t, srv, p, sts[0], obj)
}

// TestClaimWindowIsTheOnlyOne kills a task (cancels its context) at each
// step of a shard in turn: submitted with its answer lost, job recorded,
// streaming, landed. Only a submit whose answer is lost leaves the shard
// uncertain (in a bucket busy at first: until StaleClaimAfter, the claim
// may be a live task's; in a directory at once: the shard's lock says its
// process is gone); after every other the next run finishes it with no
// second submit and no second charge. With ResubmitUncertain the
// uncertain shard is submitted again, and the commit's account keeps what
// the lost submit may have charged.
func TestClaimWindowIsTheOnlyOne(t *testing.T) {
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
	for name, open := range destinations(t) {
		for _, step := range steps {
			t.Run(name+"/"+step.name, func(t *testing.T) {
				srv, c := fakeFor(t, 300, 300)
				p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
				st, obj := open(t)
				ctx, cancel := context.WithCancel(context.Background())
				o := runOpts()
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
				_, _ = export.Run(ctx, c.Agents, p, st, o)
				cancel()
				settle(t, srv)
				res, err := export.Run(context.Background(), c.Agents, p, st, runOpts())
				if !step.uncertain {
					if err != nil || !res.Complete {
						t.Fatalf("%+v, %v", res, err)
					}
					checkDataset(t, srv, p, st, obj)
					return
				}
				if name == "bucket" {
					// At once, the claim may be a live task's, still
					// waiting on its answer: the shard is left to it.
					if err != nil || !slices.Equal(res.Busy, []string{p.Shards[0].Name}) || len(res.Uncertain) != 0 {
						t.Fatalf("want the shard busy: %+v, %v", res, err)
					}
					// Once the claim is stale, its task died mid-submit.
					o := runOpts()
					o.StaleClaimAfter = time.Nanosecond
					res, err = export.Run(context.Background(), c.Agents, p, st, o)
				}
				var ue *export.UncertainError
				if !errors.As(err, &ue) || len(res.Uncertain) != 1 || res.Uncertain[0].Shard != p.Shards[0].Name || res.Complete {
					t.Fatalf("want the shard left uncertain: %+v, %v", res, err)
				}
				if n := submits(srv); n != len(p.Shards) {
					t.Errorf("%d submits for %d shards: the uncertain shard was submitted again", n, len(p.Shards))
				}
				// With the user's say-so it is submitted again.
				o = runOpts()
				o.ResubmitUncertain, o.StaleClaimAfter = true, time.Nanosecond
				res, err = export.Run(context.Background(), c.Agents, p, st, o)
				if err != nil || !res.Complete || res.Submitted != 1 || len(res.Warnings) == 0 {
					t.Fatalf("%+v, %v", res, err)
				}
				if v := res.Verification; v == nil || v.UncertainRows != p.Shards[0].Rows {
					t.Errorf("verification %+v: want the shard's %d rows uncertain", v, p.Shards[0].Rows)
				}
			})
		}
	}
}

// TestCutUploadResumesWithoutNewCharge cuts the upload of a shard's file
// twice: the object never appears half-written, the file streams again
// from a fresh link of the same job, and the ledger holds one charge.
func TestCutUploadResumesWithoutNewCharge(t *testing.T) {
	srv, c := fakeFor(t, 600, 300)
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	inner, _ := memBucket(t)
	cut := &cuttingBucket{b: inner, cuts: 2, after: 100}
	st := export.BucketStorage(blob.NewBucket(cut), "cutting")
	defer st.Close()
	var redownloads atomic.Int32
	o := runOpts()
	o.OnEvent = func(e export.Event) {
		if e.Kind == export.EventRedownload {
			redownloads.Add(1)
		}
	}
	res, err := export.Run(context.Background(), c.Agents, p, st, o)
	if err != nil || !res.Complete {
		t.Fatalf("%+v, %v", res, err)
	}
	if cut.cuts != 0 || redownloads.Load() != 2 {
		t.Errorf("%d cuts left, %d streams again", cut.cuts, redownloads.Load())
	}
	if n := submits(srv); n != len(p.Shards) {
		t.Errorf("%d submits for %d shards", n, len(p.Shards))
	}
	checkDataset(t, srv, p, st, bucketObjects{inner})
}

// TestCommitRefuses: a shard with no record, a record that does not match
// its file (its size; its bytes rewritten to others of the same length,
// which the ETag, or in a directory the sha256, tells), a digest that
// lost an id while its record keeps the row count, and an id in two
// shards' digests each stop Commit before _SUCCESS; restored, it commits.
func TestCommitRefuses(t *testing.T) {
	for name, open := range destinations(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			srv, c := fakeFor(t, 600, 300)
			p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
			st, obj := open(t)
			if _, err := export.Run(ctx, c.Agents, p, st, runOpts()); err != nil {
				t.Fatal(err)
			}
			committed := func() bool { _, err := obj.read(export.SuccessFile); return err == nil }
			if !committed() {
				t.Fatal("no _SUCCESS after a complete run")
			}
			commit := func() error { _, err := export.Commit(ctx, st, nil); return err }
			rec0 := mustRead(t, obj, "_shards/00000.json")
			data0 := mustRead(t, obj, p.Shards[0].File)
			var ce *export.CommitError

			// No record.
			mustDo(t, obj.remove("_shards/00000.json"))
			if err := commit(); !errors.As(err, &ce) || len(ce.Missing) != 1 || ce.Missing[0] != p.Shards[0].Name || committed() {
				t.Fatalf("missing record: %v; _SUCCESS %v", err, committed())
			}

			// A record of other bytes than the file holds.
			var rec export.ShardStatus
			mustDo(t, json.Unmarshal(rec0, &rec))
			rec.Bytes++
			bad, _ := json.Marshal(rec)
			mustDo(t, obj.write("_shards/00000.json", bad))
			if err := commit(); !errors.As(err, &ce) || len(ce.Mismatched) != 1 || committed() {
				t.Fatalf("mismatched record: %v", err)
			}
			mustDo(t, obj.write("_shards/00000.json", rec0))

			// The data file rewritten to other bytes of the same length.
			other := []byte(strings.Replace(string(data0), "agt_", "AGT_", 1))
			if len(other) != len(data0) || string(other) == string(data0) {
				t.Fatal("no same-length rewrite")
			}
			time.Sleep(2 * time.Millisecond) // an ETag of the time and size changes
			mustDo(t, obj.write(p.Shards[0].File, other))
			if err := commit(); !errors.As(err, &ce) || len(ce.Mismatched) != 1 || !strings.Contains(err.Error(), "written again") || committed() {
				t.Fatalf("a data file rewritten: %v", err)
			}
			// Running the shard again lands it again from its job.
			if _, err := export.Run(ctx, c.Agents, p, st, runOpts()); err != nil || !committed() {
				t.Fatalf("run after the rewrite: %v", err)
			}

			// A digest that lost an id, its record's row count kept.
			d0 := digestOf(t, obj, 0)
			rewriteDigest(t, obj, 0, d0[1:])
			if err := commit(); err == nil || !strings.Contains(err.Error(), "ids for") || committed() {
				t.Fatalf("a digest short of an id: %v", err)
			}
			rewriteDigest(t, obj, 0, d0)
			if err := commit(); err != nil || !committed() {
				t.Fatalf("commit of the restored digest: %v", err)
			}

			// A digest that no longer matches its data: an id of shard 0 in
			// shard 1's digest (rewritten with its record, consistently).
			// The data holds no id twice, which Commit finds out when it
			// names it.
			d1 := digestOf(t, obj, 1)
			d1[0] = d0[0]
			rewriteDigest(t, obj, 1, d1)
			m, err := export.Commit(ctx, st, nil)
			var de *export.DuplicateError
			if !errors.As(err, &de) || de.Count != 1 || committed() || m.Verification.Complete || !strings.Contains(de.Examples[0].ID, "does not match its data") {
				t.Fatalf("a damaged digest: %v; _SUCCESS %v", err, committed())
			}
		})
	}
}

func mustRead(t *testing.T, obj objects, key string) []byte {
	t.Helper()
	b, err := obj.read(key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCommitNamesDuplicatedIDs: the Californian agents moved to Texas
// between the two states' deliveries land twice (each file with its
// shard's state); Commit finds them from the digests and names them by id.
func TestCommitNamesDuplicatedIDs(t *testing.T) {
	for _, f := range []lendgraph.Format{lendgraph.FormatParquet, lendgraph.FormatCSV} {
		t.Run(string(f), func(t *testing.T) {
			srv, c := fakeFor(t, 1200, 0)
			p := planAgents(t, srv, c, f, "state")
			_, st := memBucket(t)
			res, err := export.Run(context.Background(), movedSource(t, c, "CA", "TX"), p, st, runOpts())
			var de *export.DuplicateError
			ca := countBy(srv, "state")["CA"]
			if !errors.As(err, &de) || de.Count != ca || res.Complete {
				t.Fatalf("%v; want the %d CA agents twice", err, ca)
			}
			ids := map[string]bool{}
			for a, err := range export.Rows[lendgraph.Agent](context.Background(), st, export.AllowIncomplete()) {
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

// TestCommitWritesSuccessLast records Commit's writes: the manifest, then
// _SUCCESS, once, last.
func TestCommitWritesSuccessLast(t *testing.T) {
	ctx := context.Background()
	srv, c := fakeFor(t, 600, 300)
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	inner, st := memBucket(t)
	o := runOpts()
	for _, s := range p.Shards {
		o.Shards = []string{s.Name}
		if _, err := export.Run(ctx, c.Agents, p, st, o); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := inner.Exists(ctx, export.SuccessFile); ok {
		t.Fatal("a run of chosen shards committed")
	}
	rec := &cuttingBucket{b: inner}
	cst := export.BucketStorage(blob.NewBucket(rec), "recording")
	defer cst.Close()
	if _, err := export.Commit(ctx, cst, nil); err != nil {
		t.Fatal(err)
	}
	var manifest, success []int
	for i, w := range rec.writes {
		switch w {
		case export.ManifestFile:
			manifest = append(manifest, i)
		case export.SuccessFile:
			success = append(success, i)
		}
	}
	if len(success) != 1 || success[0] != len(rec.writes)-1 || len(manifest) != 1 || manifest[0] > success[0] {
		t.Errorf("writes %v: want the manifest once, then _SUCCESS once, last", rec.writes)
	}
	checkDataset(t, srv, p, st, bucketObjects{inner})
}

func TestOpenRefusesCredentialsInTheURL(t *testing.T) {
	_, err := export.Open(context.Background(), "s3://AKIAEXAMPLE:s3cr3t@bucket/prefix?region=x")
	var inv *lendgraph.InvalidArgumentError
	if !errors.As(err, &inv) || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "AKIAEXAMPLE") {
		t.Errorf("%v", err)
	}
	// A URL the driver refuses: its message repeated the query, an
	// endpoint's password included.
	_, err = export.Open(context.Background(), "s3://b/x?bogus=1&endpoint=http://u:secretpw@h")
	if err == nil || strings.Contains(err.Error(), "secretpw") || strings.Contains(err.Error(), "bogus=1") || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("an unknown query parameter: %v", err)
	}
	if _, err := export.Open(context.Background(), "s3://"); !errors.As(err, &inv) {
		t.Errorf("s3:// (no bucket): %v", err)
	}
}

// digestOf reads the hashes of shard i's id digest (in its record, or an
// object of its own).
func digestOf(t *testing.T, obj objects, i int) []uint64 {
	t.Helper()
	var rec export.ShardStatus
	mustDo(t, json.Unmarshal(mustRead(t, obj, fmt.Sprintf("_shards/%05d.json", i)), &rec))
	data := rec.IDs.Data
	if rec.IDs.Object != "" {
		data = mustRead(t, obj, rec.IDs.Object)
	}
	hashes, err := export.DecodeIDDigest(data)
	if err != nil {
		t.Fatal(err)
	}
	return hashes
}

// rewriteDigest writes shard i's digest anew, and its record to match
// (its row count kept).
func rewriteDigest(t *testing.T, obj objects, i int, hashes []uint64) {
	t.Helper()
	data := export.EncodeIDDigest(slices.Clone(hashes))
	key := fmt.Sprintf("_shards/%05d", i)
	var rec export.ShardStatus
	mustDo(t, json.Unmarshal(mustRead(t, obj, key+".json"), &rec))
	if rec.IDs.Object != "" {
		mustDo(t, obj.write(rec.IDs.Object, data))
	} else {
		rec.IDs.Data = data
	}
	sum := sha256.Sum256(data)
	rec.IDs.SHA256, rec.IDs.Bytes, rec.IDs.Count = hex.EncodeToString(sum[:]), int64(len(data)), int64(len(hashes))
	raw, _ := json.Marshal(rec)
	mustDo(t, obj.write(key+".json", raw))
}

// cuttingBucket is a blob driver over another bucket that cuts the first
// cuts uploads of data files (part-*) after `after` bytes, as a dropped
// connection to the store does, and records the keys written in order.
type cuttingBucket struct {
	b     *blob.Bucket
	after int
	// only, when set, cuts only the uploads of that file (and of staged
	// files, which hold it while it is checked).
	only string

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
	data := strings.Contains(key, "/part-")
	if c.only != "" {
		data = key == c.only || strings.HasPrefix(key, "_staging/")
	}
	if data && c.cuts > 0 {
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

// TestCommitRemovesTemporaryFiles: the temporary file of a writer killed
// mid-write in a directory (beside its final name, hidden) is removed by
// Commit once stale, so that it takes no room; other files stay.
func TestCommitRemovesTemporaryFiles(t *testing.T) {
	ctx := context.Background()
	srv, c := fakeFor(t, 600, 300)
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	dir := t.TempDir()
	st := openDest(t, dir)
	if _, err := export.Run(ctx, c.Agents, p, st, runOpts()); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, filepath.FromSlash(p.Shards[0].File))
	stray := []string{filepath.Join(filepath.Dir(data), ".part-00000.csv.18ec1f1221a40c72.tmp"), filepath.Join(dir, "_claims", ".00001.json.18ec1f1221a40c73.tmp")}
	kept := []string{filepath.Join(dir, "notes.tmp"), filepath.Join(dir, "README.txt"), filepath.Join(filepath.Dir(data), ".part-00000.csv.28ec1f1221a40c72.tmp")}
	old := time.Now().Add(-time.Hour)
	for i, f := range append(stray, kept...) {
		writeFile(t, f, "id,fullName\nx,half a row")
		if i < len(stray) {
			mustDo(t, os.Chtimes(f, old, old))
		}
	}
	if _, err := export.Commit(ctx, st, nil); err != nil {
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
	if _, err := os.Stat(filepath.Join(dir, export.SuccessFile)); err != nil {
		t.Error("no _SUCCESS")
	}
}
