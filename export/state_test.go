package export_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/internal/miniotest"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// TestRunOnAFullDisk runs an export into a storage that fills up part way
// (a directory on a small tmpfs, MinIO with its data on one, and a bucket
// that refuses writes above a capacity): what the run reports is what the
// storage holds (the same shards landed and pending when read afresh), no
// shard is called uncertain (every submit's outcome is known: a job whose
// id could not be recorded was cancelled), and every job the service
// started and charged is recorded (the others were cancelled, or failed:
// neither is charged). Once space is freed, the same
// export finishes at exactly one credit a row, counted at the fake's
// ledger. (The newcomer's full disk was reported as 228 lost submits, none
// of which had been sent.)
func TestRunOnAFullDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: about two minutes of slow jobs on a full storage")
	}
	t.Run("tmpfs", func(t *testing.T) {
		mnt := mountTmpfs(t, "4m")
		dir := filepath.Join(mnt, "export")
		filler := filepath.Join(mnt, "filler")
		fullDisk(t, openDest(t, dir), func() *export.Storage { return openDest(t, dir) }, dirObjects(dir),
			func() { fill(t, filler, 256<<10) }, func() { mustDo(t, os.Remove(filler)) })
	})
	t.Run("minio", func(t *testing.T) {
		mnt := mountTmpfs(t, "48m")
		tmp := os.TempDir()
		t.Setenv("TMPDIR", mnt) // MinIO's data, in its test's temporary directory
		store := miniotest.Start(t)
		t.Setenv("TMPDIR", tmp) // the fake's files, elsewhere
		t.Setenv("AWS_ACCESS_KEY_ID", store.AccessKeyID)
		t.Setenv("AWS_SECRET_ACCESS_KEY", store.SecretAccessKey)
		t.Setenv("AWS_REGION", "us-east-1")
		t.Setenv("AWS_CONFIG_FILE", "/dev/null")
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
		u := "s3://" + store.Bucket + "/full?endpoint=" + url.QueryEscape(store.Endpoint) + "&use_path_style=true"
		root, err := blob.OpenBucket(context.Background(), "s3://"+store.Bucket+"?endpoint="+url.QueryEscape(store.Endpoint)+"&use_path_style=true")
		if err != nil {
			t.Fatal(err)
		}
		raw := blob.PrefixedBucket(root, "full/")
		defer raw.Close()
		createS3Bucket(t, root, store.Bucket)
		filler := filepath.Join(mnt, "filler")
		fullDisk(t, openDest(t, u), func() *export.Storage { return openDest(t, u) }, bucketObjects{raw},
			func() { fill(t, filler, 640<<10) }, func() {
				mustDo(t, os.Remove(filler))
				// MinIO takes a moment to see the room (it caches its
				// drive's usage).
				for range 100 {
					if raw.WriteAll(context.Background(), "_probe", []byte("x"), nil) == nil {
						_ = raw.Delete(context.Background(), "_probe")
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
				t.Fatal("MinIO still full after the room was freed")
			})
	})
	t.Run("bucket", func(t *testing.T) {
		inner, _ := memBucket(t)
		full := &fullBucket{b: inner}
		st := export.BucketStorage(blob.NewBucket(full), "full bucket")
		defer st.Close()
		fullDisk(t, st, func() *export.Storage { return export.BucketStorage(inner, "inner") }, bucketObjects{inner},
			func() { full.setCapacity(full.used() + 120<<10) }, func() { full.setCapacity(-1) })
	})
}

// fullDisk runs the scenario of TestRunOnAFullDisk in st: fill leaves
// little room, free makes room again; fresh opens the storage anew.
func fullDisk(t *testing.T, st *export.Storage, fresh func() *export.Storage, obj objects, fill, free func()) {
	t.Helper()
	ctx := context.Background()
	// Jobs take a little while, as the service's do: a job whose id
	// cannot be recorded is still running when it is cancelled.
	srv, c := fakeFor(t, 3000, 0, lendgraphtest.WithJobRate("delivery", 500))
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	if err := p.Write(ctx, st); err != nil {
		t.Fatal(err)
	}
	fill()
	// While the storage is full, every job lasts at least a tenth of a
	// second (a shard of one row included): a job whose id cannot be
	// recorded is still running when the run cancels it, as a real one
	// is, instead of completing (and being charged) in the instant
	// between the submit and the failed record (seen on MinIO under -race:
	// a one-row shard's job completed first, and no write could record it).
	srv.SetJobRate("delivery", 10)
	o := runOpts()
	o.Concurrency = 8
	res, err := export.Run(ctx, c.Agents, p, st, o)
	if err == nil || res == nil || res.Complete {
		t.Fatalf("a run on a full disk: %+v, %v", res, err)
	}
	t.Logf("on a full disk: %d of %d shards landed; %.300s", res.Landed, res.Shards, err)
	if len(res.Uncertain) != 0 || res.UncertainRows != 0 {
		t.Errorf("shards called uncertain: %+v", res.Uncertain)
	}
	for _, w := range []string{"answer was lost", "charged twice", "may hold a job"} {
		if strings.Contains(err.Error(), w) {
			t.Errorf("the error says %q: %v", w, err)
		}
	}
	// What the run reports is what the storage holds.
	m, merr := export.ReadManifest(ctx, fresh())
	if merr != nil {
		t.Fatal(merr)
	}
	landed, recorded := 0, map[string]bool{}
	var pending []string
	for _, s := range m.Shards {
		switch s.State {
		case export.StateLanded:
			landed++
		case export.StateSubmitting:
			t.Errorf("shard %s is submitting in the storage", s.Name)
		}
		if s.State != export.StateLanded {
			pending = append(pending, s.Name)
		}
		if s.JobID != "" {
			recorded[s.JobID] = true
		}
	}
	if landed != res.Landed || strings.Join(pending, ",") != strings.Join(res.Pending, ",") {
		t.Errorf("the run says %d landed, %d pending; the storage holds %d landed, pending %v", res.Landed, len(res.Pending), landed, pending)
	}
	// Every job the service charged is recorded.
	settle(t, srv)
	for _, j := range srv.Jobs() {
		if j.Kind == "delivery" && j.State == "completed" && !recorded[j.ID] {
			t.Errorf("job %s (%s), charged, is not recorded", j.ID, j.State)
		}
	}

	free()
	srv.SetJobRate("delivery", 500)
	res, err = export.Run(ctx, c.Agents, p, st, o)
	if err != nil || !res.Complete {
		t.Fatalf("after freeing space: %+v, %v", res, err)
	}
	checkDataset(t, srv, p, st, obj) // one debit a shard, one credit a row
}

// mountTmpfs mounts a tmpfs of size for the test, or skips it where the
// test may not mount one (not root, or a sandbox that refuses).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	mnt, err := os.MkdirTemp("", "lendgraph-tmpfs-*")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size="+size); err != nil {
		_ = os.Remove(mnt)
		t.Skipf("cannot mount a tmpfs (%v): the test needs root", err)
	}
	t.Cleanup(func() {
		_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		_ = os.Remove(mnt)
	})
	return mnt
}

// fill writes name until the file system is full, then gives back room
// bytes.
func fill(t *testing.T, name string, room int64) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var n int64
	for {
		k, err := f.Write(buf)
		n += int64(k)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	mustDo(t, f.Truncate(max(n-room, 0)))
}

// createS3Bucket creates the bucket b is in, through the S3 client under it.
func createS3Bucket(t *testing.T, b *blob.Bucket, name string) {
	t.Helper()
	var client *s3.Client
	if !b.As(&client) {
		t.Fatal("not an S3 bucket")
	}
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("creating bucket %s: %v", name, err)
	}
}

// fullBucket is a blob driver over another bucket that refuses a write
// (ENOSPC, as a full disk does) once the bytes stored would pass its
// capacity (-1: none); deletes give room back.
type fullBucket struct {
	b *blob.Bucket

	mu       sync.Mutex
	sizes    map[string]int64
	capacity int64
}

func (f *fullBucket) used() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for _, s := range f.sizes {
		n += s
	}
	return n
}

func (f *fullBucket) setCapacity(n int64) {
	f.mu.Lock()
	f.capacity = n
	f.mu.Unlock()
}

func (f *fullBucket) ErrorCode(err error) gcerrors.ErrorCode { return gcerrors.Code(err) }
func (f *fullBucket) As(any) bool                            { return false }
func (f *fullBucket) ErrorAs(error, any) bool                { return false }
func (f *fullBucket) Close() error                           { return nil }
func (f *fullBucket) Delete(ctx context.Context, key string) error {
	err := f.b.Delete(ctx, key)
	if err == nil {
		f.mu.Lock()
		delete(f.sizes, key)
		f.mu.Unlock()
	}
	return err
}
func (f *fullBucket) Copy(ctx context.Context, dst, src string, _ *driver.CopyOptions) error {
	a, err := f.b.Attributes(ctx, src)
	if err != nil {
		return err
	}
	if err := f.reserve(dst, a.Size); err != nil {
		return err
	}
	return f.b.Copy(ctx, dst, src, nil)
}
func (f *fullBucket) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", errors.New("no signed URLs")
}
func (f *fullBucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	a, err := f.b.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{ContentType: a.ContentType, Metadata: a.Metadata, ModTime: a.ModTime, Size: a.Size, MD5: a.MD5, ETag: a.ETag}, nil
}
func (f *fullBucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	return (&cuttingBucket{b: f.b}).ListPaged(ctx, opts)
}
func (f *fullBucket) NewRangeReader(ctx context.Context, key string, off, n int64, _ *driver.ReaderOptions) (driver.Reader, error) {
	return (&cuttingBucket{b: f.b}).NewRangeReader(ctx, key, off, n, nil)
}

// reserve takes room for an object of n bytes at key, or refuses it.
func (f *fullBucket) reserve(key string, n int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sizes == nil {
		f.sizes = map[string]int64{}
	}
	var used int64
	for k, s := range f.sizes {
		if k != key {
			used += s
		}
	}
	if f.capacity > 0 && used+n > f.capacity {
		return fmt.Errorf("writing %s: %w", key, syscall.ENOSPC)
	}
	f.sizes[key] = n
	return nil
}

func (f *fullBucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	ctx, cancel := context.WithCancel(ctx)
	w, err := f.b.NewWriter(ctx, key, &blob.WriterOptions{ContentType: contentType, IfNotExist: opts.IfNotExist, Metadata: opts.Metadata})
	if err != nil {
		cancel()
		return nil, err
	}
	return &fullWriter{f: f, w: w, cancel: cancel, key: key}, nil
}

// fullWriter is a write to a fullBucket: refused once it passes the
// capacity, and then aborted (nothing appears), as a store's is.
type fullWriter struct {
	f      *fullBucket
	w      *blob.Writer
	cancel context.CancelFunc
	key    string
	n      int64
	err    error
}

func (w *fullWriter) Write(p []byte) (int, error) {
	if err := w.f.reserve(w.key+"\x00writing", w.n+int64(len(p))); err != nil {
		w.err = err
		return 0, err
	}
	w.n += int64(len(p))
	return w.w.Write(p)
}

func (w *fullWriter) Close() error {
	defer w.cancel()
	w.f.mu.Lock()
	delete(w.f.sizes, w.key+"\x00writing")
	w.f.mu.Unlock()
	if w.err == nil {
		w.err = w.f.reserve(w.key, w.n)
	}
	if w.err != nil {
		w.cancel() // before Close: the write is aborted
		_ = w.w.Close()
		return w.err
	}
	return w.w.Close()
}

var _ io.Writer = (*fullWriter)(nil)
