package export

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// ioTimeout bounds each small read or write of the export's own objects
// (plan, claims, records). They are made with the run's context detached
// from its cancellation, so that a job id is recorded even after ctx ended.
const ioTimeout = 30 * time.Second

// The upload of a data object: parts of objectPartSize, objectPartsInFlight
// at once (with S3, a multipart upload), so that a shard in flight holds
// about (objectPartsInFlight+1) × objectPartSize of upload buffers, plus
// the download's window (lendgraph's Download) and 8 bytes an id for the
// digest. BenchmarkLandObject measures it.
const (
	objectPartSize      = 8 << 20
	objectPartsInFlight = 2
)

// bucketBackend is an export under a prefix of an object store bucket.
type bucketBackend struct {
	b *blob.Bucket
}

// openBucket opens the bucket a URL names (see Open).
func openBucket(ctx context.Context, u *url.URL, raw string) (*Storage, error) {
	if u.Host == "" && u.Scheme != "mem" {
		return nil, invalid("dest", "%q names no bucket; use %s://bucket/prefix", redactURL(raw), u.Scheme)
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		q := u.Query()
		q.Set("prefix", path.Join(q.Get("prefix"), p)+"/")
		u.RawQuery, u.Path = q.Encode(), ""
	}
	b, err := blob.OpenBucket(ctx, u.String())
	if err != nil {
		// The driver's message repeats the URL it was given, query and
		// all (an endpoint may hold a user and password): it is reworded,
		// not wrapped. Opening fails only on the URL's settings, which
		// the message names; there is nothing else to branch on.
		return nil, fmt.Errorf("export: opening %s: %s", redactURL(raw), queryInText.ReplaceAllString(err.Error(), "?…$1"))
	}
	return &Storage{b: &bucketBackend{b: b}, where: redactURL(raw)}, nil
}

// queryInText is a URL's query in a message: whatever follows a '?' up to
// the next space (a colon before it, the message's own, is kept).
var queryInText = regexp.MustCompile(`\?\S+?(:?(?:\s|$))`)

func (k *bucketBackend) close() error { return k.b.Close() }

func (k *bucketBackend) read(ctx context.Context, key string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	data, err := k.b.ReadAll(ctx, key)
	return data, storeErr(err)
}

func (k *bucketBackend) put(ctx context.Context, key string, data []byte, exclusive bool) error {
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	ct := "application/json"
	if !strings.HasSuffix(key, ".json") {
		ct = "application/octet-stream"
	}
	err := k.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: ct, DisableContentTypeDetection: true, IfNotExist: exclusive})
	if exclusive && existed(err) {
		return fmt.Errorf("%s: %w", key, errExists)
	}
	return storeErr(err)
}

// reserve cannot take room in an object store: its reservation is a put.
func (k *bucketBackend) reserve(_ context.Context, key string, _ int) (reservation, error) {
	return putLater{k, key}, nil
}

// putLater is a reservation that reserves nothing.
type putLater struct {
	b   backend
	key string
}

func (p putLater) commit(ctx context.Context, data []byte) error {
	return p.b.put(ctx, p.key, data, false)
}
func (p putLater) release() {}

func (k *bucketBackend) remove(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	if err := k.b.Delete(ctx, key); err != nil && !notFound(err) {
		return err
	}
	return nil
}

func (k *bucketBackend) list(ctx context.Context, dir string) ([]string, error) {
	var keys []string
	it := k.b.List(&blob.ListOptions{Prefix: dir, Delimiter: "/"})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return keys, nil
		}
		if err != nil {
			return nil, storeErr(err)
		}
		if !obj.IsDir {
			keys = append(keys, obj.Key)
		}
	}
}

func (k *bucketBackend) stat(ctx context.Context, key string) (int64, string, error) {
	a, err := k.b.Attributes(ctx, key)
	if err != nil {
		return 0, "", storeErr(err)
	}
	return a.Size, a.ETag, nil
}

func (k *bucketBackend) open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	r, err := k.b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, 0, storeErr(err)
	}
	return r, r.Size(), nil
}

func (k *bucketBackend) openAt(ctx context.Context, key string) (io.ReaderAt, int64, func() error, error) {
	size, _, err := k.stat(ctx, key)
	if err != nil {
		return nil, 0, nil, err
	}
	return newObjectReaderAt(ctx, k.b, key), size, func() error { return nil }, nil
}

// create streams a data object into the store: straight under its key (it
// appears only when the writer is closed, and cancelling the writer's
// context before Close aborts the upload), or, staged, under _staging/, to
// be checked with ranged reads and copied to its key.
func (k *bucketBackend) create(ctx context.Context, key, contentType string, staged bool) (dataWriter, error) {
	target := key
	if staged {
		// A name of this attempt's own: another task may stage the same
		// job's file at the same time.
		var tag [8]byte
		_, _ = rand.Read(tag[:])
		target = fmt.Sprintf("%s%x-%s", stagingDir, tag, path.Base(key))
	}
	wctx, cancel := context.WithCancel(ctx)
	w, err := k.b.NewWriter(wctx, target, &blob.WriterOptions{ContentType: contentType, DisableContentTypeDetection: true,
		BufferSize: objectPartSize, MaxConcurrency: objectPartsInFlight})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("opening %s for writing: %w", target, err)
	}
	return &bucketWriter{k: k, ctx: ctx, cancel: cancel, w: w, key: key, target: target, staged: staged}, nil
}

// bucketWriter is a data object being uploaded.
type bucketWriter struct {
	k           *bucketBackend
	ctx         context.Context
	cancel      context.CancelFunc
	w           *blob.Writer
	key, target string
	staged      bool
	closed      bool
}

func (w *bucketWriter) Write(b []byte) (int, error) { return w.w.Write(b) }

// finish completes the upload of a staged object; a streamed one is
// completed by publish.
func (w *bucketWriter) finish() error {
	if !w.staged {
		return nil
	}
	w.closed = true
	err := w.w.Close()
	w.cancel()
	if err != nil {
		return fmt.Errorf("finishing the upload of %s: %w", w.target, err)
	}
	return nil
}

func (w *bucketWriter) readerAt() (io.ReaderAt, error) {
	return newObjectReaderAt(w.ctx, w.k.b, w.target), nil
}

func (w *bucketWriter) publish(ctx context.Context) (int64, string, error) {
	if w.staged {
		err := w.k.b.Copy(ctx, w.key, w.target, nil)
		_ = w.k.remove(ctx, w.target)
		if err != nil {
			return 0, "", fmt.Errorf("copying %s to %s: %w", w.target, w.key, err)
		}
	} else {
		w.closed = true
		err := w.w.Close()
		w.cancel()
		if err != nil {
			return 0, "", fmt.Errorf("finishing the upload of %s: %w", w.key, err)
		}
	}
	return w.k.stat(ctx, w.key)
}

// abort drops the object: the upload's context is cancelled before Close,
// which aborts it (nothing appears); a staged object already uploaded is
// removed.
func (w *bucketWriter) abort() {
	if !w.closed {
		w.cancel()
		_ = w.w.Close()
		w.closed = true
	}
	w.cancel()
	if w.staged {
		_ = w.k.remove(context.WithoutCancel(w.ctx), w.target)
	}
}

func (k *bucketBackend) lock(int, string) (func(), bool, error) { return func() {}, true, nil }
func (k *bucketBackend) locks() bool                            { return false }

// sweep has nothing to do in an object store: an object is written whole
// or not at all. (A staged parquet file a killed task left under
// _staging/ is off the dataset's glob and safe to delete.)
func (k *bucketBackend) sweep(context.Context) error { return nil }

// storeErr maps the store's not-found to errNotFound, keeping its text.
func storeErr(err error) error {
	if err != nil && notFound(err) {
		return fmt.Errorf("%w (%w)", errNotFound, err)
	}
	return err
}

// existed reports a conditional write refused because the object exists
// (HTTP 412). gcerrors.Code says so as gcerrors.FailedPrecondition, except
// that s3blob (v0.46) takes any error whose message holds "301" for a
// missing bucket, and a 412's request id may hold it: the service's own
// error code is checked too.
func existed(err error) bool {
	if err == nil {
		return false
	}
	code, _ := serviceCode(err)
	return gcerrors.Code(err) == gcerrors.FailedPrecondition || code == "PreconditionFailed"
}

// notFound reports an object (or bucket) that is not there. gcerrors.Code
// says so as gcerrors.NotFound, but s3blob (v0.46) says so too for any
// error whose message holds "301", taken for a redirect to a bucket's
// region, and a request id may hold it (a refused signature, a 503: about
// one MinIO error in fifty, with its 16-digit request id and 64-digit
// host id): where the error carries the service's own code, that code
// must say not found as well.
func notFound(err error) bool {
	if gcerrors.Code(err) != gcerrors.NotFound {
		return false
	}
	code, ok := serviceCode(err)
	if !ok {
		return true
	}
	switch code {
	case "NoSuchKey", "NoSuchBucket", "NotFound", "ObjectNotInActiveTierError":
		return true
	}
	return false
}

// serviceCode is the store's own code for err, where err carries one (the
// S3 SDK's API errors do).
func serviceCode(err error) (string, bool) {
	var coded interface{ ErrorCode() string }
	if errors.As(err, &coded) {
		return coded.ErrorCode(), true
	}
	return "", false
}

// objectReaderAt reads an object at random with ranged reads of
// readBlock bytes, keeping the last readBlocks of them (a parquet decoder
// reads the footer, then each column chunk, in small pieces).
type objectReaderAt struct {
	ctx context.Context
	b   *blob.Bucket
	key string

	mu     sync.Mutex
	blocks map[int64][]byte
	order  []int64
}

const (
	readBlock  = 1 << 20
	readBlocks = 16
)

func newObjectReaderAt(ctx context.Context, b *blob.Bucket, key string) *objectReaderAt {
	return &objectReaderAt{ctx: ctx, b: b, key: key, blocks: map[int64][]byte{}}
}

// ReadAt implements io.ReaderAt.
func (o *objectReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		blk, err := o.block((off + int64(n)) / readBlock)
		if err != nil {
			return n, err
		}
		at := int((off + int64(n)) % readBlock)
		if at >= len(blk) {
			return n, io.EOF
		}
		n += copy(p[n:], blk[at:])
	}
	return n, nil
}

// block returns block i of the object, from memory or the store.
func (o *objectReaderAt) block(i int64) ([]byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if b, ok := o.blocks[i]; ok {
		return b, nil
	}
	rr, err := o.b.NewRangeReader(o.ctx, o.key, i*readBlock, readBlock, nil)
	if err != nil {
		return nil, err
	}
	defer rr.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(rr); err != nil {
		return nil, err
	}
	if len(o.order) == readBlocks {
		delete(o.blocks, o.order[0])
		o.order = o.order[1:]
	}
	o.blocks[i] = buf.Bytes()
	o.order = append(o.order, i)
	return buf.Bytes(), nil
}
