package export

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"gocloud.dev/blob"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/parquet"
)

// The upload of a shard's file into a bucket: parts of objectPartSize,
// objectPartsInFlight at once (with S3, a multipart upload), so that a
// shard in flight holds about (objectPartsInFlight+1) × objectPartSize of
// upload buffers, plus the download's window (lendgraph's Download) and
// 8 bytes an id for the digest. BenchmarkLandObject measures it.
const (
	objectPartSize      = 8 << 20
	objectPartsInFlight = 2
	// landAttempts is how many times a shard's file is streamed from a
	// fresh link of its job before the shard fails this run.
	landAttempts = 3
)

// IDDigest describes the digest of a shard's ids, an object beside the
// shard's record: the first 8 bytes of the sha256 of each id, sorted,
// delta-coded as uvarints after the header "lgids1". Commit checks that no
// id appears twice across the dataset from the digests alone, without
// reading the data files (two ids whose hashes agree count as one id seen
// twice: about n²/2⁶⁵ for n rows, 3·10⁻⁶ for ten million).
type IDDigest struct {
	Object string `json:"object"`
	Count  int64  `json:"count"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// digestMagic opens a digest object.
const digestMagic = "lgids1"

// idHash is the digest's hash of an id.
func idHash(id string) uint64 {
	h := sha256.Sum256([]byte(id))
	return binary.BigEndian.Uint64(h[:8])
}

// encodeDigest is the digest object of hashes (sorted in place).
func encodeDigest(hashes []uint64) []byte {
	slices.Sort(hashes)
	b := make([]byte, 0, len(digestMagic)+len(hashes)*7+binary.MaxVarintLen64)
	b = append(b, digestMagic...)
	b = binary.AppendUvarint(b, uint64(len(hashes)))
	var prev uint64
	for _, h := range hashes {
		b = binary.AppendUvarint(b, h-prev)
		prev = h
	}
	return b
}

// readDigest streams a digest object, giving each hash to fn.
func readDigest(r io.Reader, fn func(uint64) error) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic := make([]byte, len(digestMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != digestMagic {
		return 0, fmt.Errorf("not an id digest (%v)", err)
	}
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return 0, fmt.Errorf("a damaged id digest: %w", err)
	}
	var h uint64
	for i := range n {
		d, err := binary.ReadUvarint(br)
		if err != nil {
			return int64(i), fmt.Errorf("a damaged id digest: %d of %d ids: %w", i, n, err)
		}
		h += d
		if err := fn(h); err != nil {
			return int64(i), err
		}
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		return int64(n), errors.New("a damaged id digest: bytes after its last id")
	}
	return int64(n), nil
}

// landing is a shard's file as it landed in the bucket.
type landing struct {
	bytes, rows int64
	sum, etag   string
	ids         *IDDigest
}

// landObject streams the job's file from its signed link into the bucket,
// checks it (it decodes; its rows are the job's charged rows; its sha256
// is recorded) and records the shard. A cut download or upload, or a file
// that does not check, is streamed again from a fresh link of the same job
// (no new job, no new charge), up to landAttempts times.
func (r *runner[T]) landObject(ctx context.Context, sh *Shard, job *lendgraph.DeliveryJob[T], st *lendgraph.DeliveryStatus) error {
	want := st.Processed
	if st.ChargedCount != nil {
		want = *st.ChargedCount
	}
	var (
		l   *landing
		err error
	)
	for attempt := range landAttempts {
		r.event(Event{Kind: EventDownloading, Shard: sh.Name, State: StateSubmitted, JobID: job.ID, What: "streaming into the bucket", Size: sizeOf(st)})
		l, err = r.streamObject(ctx, sh, job, want)
		if err == nil || ctx.Err() != nil || attempt == landAttempts-1 {
			break
		}
		r.event(Event{Kind: EventRedownload, Shard: sh.Name, State: StateSubmitted, JobID: job.ID, What: "streaming again from a fresh link of job " + job.ID + ": " + err.Error()})
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return r.landFailed(sh, job, err)
	}
	err = r.store.update(sh.Name, func(s *ShardStatus) {
		s.State, s.JobID, s.Error = StateLanded, job.ID, ""
		s.Rows, s.Bytes, s.SHA256, s.ETag, s.IDs = l.rows, l.bytes, l.sum, l.etag, l.ids
		s.Processed, s.ChargedCount, s.CreditsCharged, s.CreditLedgerID = st.Processed, st.ChargedCount, st.CreditsCharged, st.CreditLedgerID
		s.LandedAt = time.Now().UTC()
	})
	if err != nil {
		return err
	}
	r.event(Event{Kind: EventLanded, Shard: sh.Name, State: StateLanded, JobID: job.ID, Rows: l.rows, Downloaded: l.bytes, Size: l.bytes, What: "landed"})
	return nil
}

// streamObject streams the job's file into the bucket once. A file of a
// streamed format is written under its final name, hashed and decoded as
// it passes: when anything fails, or its rows are not want, the writer's
// context is cancelled before Close, which aborts the upload, and nothing
// appears. Parquet is decoded at random, so it is written to a staging
// name, checked from the store (ranged reads: nothing on local disk), and
// copied to its final name once it checks out.
func (r *runner[T]) streamObject(ctx context.Context, sh *Shard, job *lendgraph.DeliveryJob[T], want int64) (*landing, error) {
	b := r.opts.Bucket
	i := r.plan.index(sh.Name)
	format := r.plan.Request.Format
	key := sh.File
	staged := format == lendgraph.FormatParquet
	if staged {
		// A name of this attempt's own: another task may stage the same
		// job's file at the same time.
		var tag [6]byte
		_, _ = rand.Read(tag[:])
		key = fmt.Sprintf("%s%05d-%s-%x%s", stagingDir, i, job.ID, tag, extension(format))
	}
	// The dataset is about to change: not complete until committed again.
	if err := deleteObject(ctx, b, SuccessFile); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.NewWriter(wctx, key, &blob.WriterOptions{ContentType: contentType(format), DisableContentTypeDetection: true,
		BufferSize: objectPartSize, MaxConcurrency: objectPartsInFlight})
	if err != nil {
		return nil, fmt.Errorf("opening %s for writing: %w", key, err)
	}
	sum := sha256.New()
	var hashes []uint64
	addID := func(id string) error { hashes = append(hashes, idHash(id)); return nil }
	dst := io.MultiWriter(w, sum)
	var (
		rows        int64
		derr        error
		pw          *io.PipeWriter
		done        = make(chan struct{})
		ended       atomic.Bool // the download returned
		decodeFirst bool        // the decoder failed while the download went on
	)
	if staged {
		close(done)
	} else {
		var pr *io.PipeReader
		pr, pw = io.Pipe()
		dst = io.MultiWriter(w, sum, pw)
		go func() {
			defer close(done)
			rows, derr = countStream(wctx, pr, format, addID)
			if derr == nil {
				_, derr = io.Copy(io.Discard, pr) // what the decoder left (trailing space)
			}
			decodeFirst = derr != nil && !ended.Load()
			pr.CloseWithError(cmpErr(derr, errDecoderDone))
		}()
	}
	n, err := job.Download(wctx, dst)
	ended.Store(true)
	if pw != nil {
		pw.CloseWithError(err)
	}
	<-done
	switch {
	case derr != nil && (err == nil || decodeFirst):
		err = fmt.Errorf("the file does not decode: %w", derr)
	case err != nil:
		err = fmt.Errorf("streaming job %s into %s: %w", job.ID, key, err)
	case !staged && rows != want:
		err = fmt.Errorf("the file holds %d rows but job %s delivered %d", rows, job.ID, want)
	}
	if err != nil {
		cancel() // before Close: the upload is aborted, nothing appears
		_ = w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("finishing the upload of %s: %w", key, err)
	}
	if staged {
		if rows, err = r.checkStaged(ctx, key, sh.File, n, want, addID); err != nil {
			_ = deleteObject(ctx, b, key)
			return nil, err
		}
	}
	attrs, err := b.Attributes(ctx, sh.File)
	if err != nil {
		return nil, fmt.Errorf("reading the attributes of %s: %w", sh.File, err)
	}
	if attrs.Size != n {
		return nil, fmt.Errorf("%s has %d bytes in the bucket; %d were written", sh.File, attrs.Size, n)
	}
	digest := encodeDigest(hashes)
	dsum := sha256.Sum256(digest)
	ids := &IDDigest{Object: shardKey(recordsDir, i, ".ids"), Count: int64(len(hashes)), Bytes: int64(len(digest)), SHA256: hex.EncodeToString(dsum[:])}
	if err := writeBlob(ctx, b, ids.Object, digest); err != nil {
		return nil, fmt.Errorf("writing the id digest of shard %s: %w", sh.Name, err)
	}
	return &landing{bytes: n, rows: rows, sum: hex.EncodeToString(sum.Sum(nil)), etag: attrs.ETag, ids: ids}, nil
}

// errDecoderDone ends the pipe into a decoder that read everything.
var errDecoderDone = errors.New("export: the decoder is done")

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// checkStaged decodes a staged parquet file from the bucket and, when its
// rows are want, copies it to its final name and removes it.
func (r *runner[T]) checkStaged(ctx context.Context, key, final string, size, want int64, addID func(string) error) (int64, error) {
	b := r.opts.Bucket
	rows, err := countRows(ctx, parquet.Decode[idRow](newObjectReaderAt(ctx, b, key), size), addID)
	if err == nil && rows != want {
		err = fmt.Errorf("the file holds %d rows but the job delivered %d", rows, want)
	}
	if err != nil {
		return 0, fmt.Errorf("the file does not check out: %w", err)
	}
	if err := b.Copy(ctx, final, key, nil); err != nil {
		return 0, fmt.Errorf("copying %s to %s: %w", key, final, err)
	}
	return rows, deleteObject(ctx, b, key)
}

// intactObject checks a landed shard's object against its record by its
// attributes (size and ETag), without reading it: "" when it matches.
func (r *runner[T]) intactObject(ctx context.Context, sh *Shard, cur *ShardStatus) string {
	return objectMatches(ctx, r.opts.Bucket, cur)
}

// objectMatches is "" when the shard's data object is there with the size
// and ETag its record says, else what is wrong.
func objectMatches(ctx context.Context, b *blob.Bucket, rec *ShardStatus) string {
	attrs, err := b.Attributes(ctx, rec.File)
	switch {
	case notFound(err):
		return "its data object " + rec.File + " is missing"
	case err != nil:
		return err.Error()
	case attrs.Size != rec.Bytes:
		return fmt.Sprintf("%s has %d bytes, %d when it landed", rec.File, attrs.Size, rec.Bytes)
	case rec.ETag != "" && attrs.ETag != rec.ETag:
		return fmt.Sprintf("%s was written again since it landed (ETag %s, %s when it landed)", rec.File, attrs.ETag, rec.ETag)
	}
	return ""
}

// deleteObject removes an object; one that is not there is no error.
func deleteObject(ctx context.Context, b *blob.Bucket, key string) error {
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	if err := b.Delete(ctx, key); err != nil && !notFound(err) {
		return fmt.Errorf("export: removing %s: %w", key, err)
	}
	return nil
}

// writeBlob writes an object of the export whole (not JSON).
func writeBlob(ctx context.Context, b *blob.Bucket, key string, data []byte) error {
	return b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/octet-stream", DisableContentTypeDetection: true})
}

// contentType is the MIME type a format's objects are written with.
func contentType(f lendgraph.Format) string {
	switch f {
	case lendgraph.FormatCSV:
		return "text/csv"
	case lendgraph.FormatJSON:
		return "application/json"
	case lendgraph.FormatNDJSON:
		return "application/gzip"
	}
	return "application/octet-stream"
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
