package export

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/parquet"
)

// landAttempts is how many times a shard's file is streamed from a fresh
// link of its job before the shard fails this run.
const landAttempts = 3

// IDDigest describes the digest of a shard's ids, an object beside the
// shard's record: the first 8 bytes of the sha256 of each id, sorted,
// delta-coded as uvarints after the header "lgids1". Commit checks that no
// id appears twice across the dataset from the digests alone, without
// reading the data files (two ids whose hashes agree count as one id seen
// twice: about n²/2⁶⁵ for n rows, 3·10⁻⁶ for ten million).
//
// A small digest (inlineDigest bytes or fewer: a few hundred ids) is kept
// in the record itself (Data), which spares a file a shard; a larger one is
// an object of its own (Object).
type IDDigest struct {
	Object string `json:"object,omitempty"`
	Data   []byte `json:"data,omitempty"`
	Count  int64  `json:"count"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// inlineDigest is the largest digest kept in its shard's record.
const inlineDigest = 2048

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

// landing is a shard's file as it landed.
type landing struct {
	bytes, rows int64
	sum, etag   string
	ids         *IDDigest
}

// land streams the job's file from its signed link into the storage,
// checks it (it decodes; its rows are the job's charged rows; every row
// holds the shard's partition values; its sha256 is recorded) and records
// the shard. A cut download or upload, or a file that does not check, is
// streamed again from a fresh link of the same job (no new job, no new
// charge), up to landAttempts times; a file of another partition's rows is
// not (it would be the same again).
func (r *runner[T]) land(ctx context.Context, sh *Shard, job *lendgraph.DeliveryJob[T], st *lendgraph.DeliveryStatus) error {
	want := st.Processed
	if st.ChargedCount != nil {
		want = *st.ChargedCount
	}
	var (
		l   *landing
		err error
	)
	for attempt := range landAttempts {
		r.event(Event{Kind: EventDownloading, Shard: sh.Name, State: StateSubmitted, JobID: job.ID, What: "downloading", Size: sizeOf(st)})
		l, err = r.stream(ctx, sh, job, st, want)
		var pe *partitionError
		if err == nil || ctx.Err() != nil || attempt == landAttempts-1 || errors.As(err, &pe) {
			break
		}
		r.event(Event{Kind: EventRedownload, Shard: sh.Name, State: StateSubmitted, JobID: job.ID, What: "downloading again from a fresh link of job " + job.ID + ": " + err.Error()})
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return r.landFailed(sh, job, err)
	}
	err = r.state.update(sh.Name, func(s *ShardStatus) {
		s.State, s.JobID, s.Error = StateLanded, job.ID, ""
		s.Rows, s.Bytes, s.SHA256, s.ETag, s.IDs = l.rows, l.bytes, l.sum, l.etag, l.ids
		s.Processed, s.ChargedCount, s.CreditsCharged, s.CreditLedgerID = st.Processed, st.ChargedCount, st.CreditsCharged, st.CreditLedgerID
		s.LandedAt = time.Now().UTC()
	})
	if err != nil {
		// The file is in place but not recorded: the claim still holds
		// the job, and the next run lands it again from it.
		return r.landFailed(sh, job, err)
	}
	r.landedNow(sh.Name, st)
	r.event(Event{Kind: EventLanded, Shard: sh.Name, State: StateLanded, JobID: job.ID, Rows: l.rows, Downloaded: l.bytes, Size: l.bytes, What: "landed"})
	return nil
}

// landFailed reports a landing that failed: the job stays (completed and
// charged) and its claim says so, so the next run lands it again. Nothing
// is written: the storage already holds the job id.
func (r *runner[T]) landFailed(sh *Shard, job *lendgraph.DeliveryJob[T], err error) error {
	r.state.note(sh.Name, err.Error())
	r.event(Event{Kind: EventFailed, Shard: sh.Name, State: StateSubmitted, JobID: job.ID, What: "download failed", Err: err})
	return err
}

// stream lands the job's file once. The bytes go into the storage's
// writer (a temporary file beside the final name, or an upload) and are
// hashed and, for a streamed format, decoded as they pass: when anything
// fails, or the file does not check, the writer is aborted and nothing
// appears. Parquet is decoded at random, so it is checked once written
// (from the temporary file, or from the store with ranged reads) and then
// published under its name. Then the digest of its ids is written.
func (r *runner[T]) stream(ctx context.Context, sh *Shard, job *lendgraph.DeliveryJob[T], st *lendgraph.DeliveryStatus, want int64) (*landing, error) {
	format := r.plan.Request.Format
	staged := format == lendgraph.FormatParquet
	// The dataset is about to change: not complete until committed again.
	if err := r.st.b.remove(ctx, SuccessFile); err != nil {
		return nil, fmt.Errorf("removing %s: %w", SuccessFile, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := r.st.b.create(wctx, sh.File, contentType(format), staged)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", sh.File, err)
	}
	keys := keyCheckOf(r.plan, sh)
	sum := sha256.New()
	var hashes []uint64
	sink := func(row *checkRow) error {
		if err := keys.check(row); err != nil {
			return err
		}
		hashes = append(hashes, idHash(row.ID))
		return nil
	}
	progress := &progressWriter{at: time.Now(), report: func(done int64) {
		r.event(Event{Kind: EventDownloading, Shard: sh.Name, State: StateSubmitted, JobID: job.ID, What: "downloading", Downloaded: done, Size: sizeOf(st)})
	}}
	dst := io.MultiWriter(w, sum, progress)
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
		dst = io.MultiWriter(w, sum, progress, pw)
		go func() {
			defer close(done)
			rows, derr = countStream(wctx, pr, format, sink)
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
		err = fmt.Errorf("the file does not check out: %w", derr)
	case err != nil:
		err = fmt.Errorf("downloading job %s: %w", job.ID, err)
	case !staged && rows != want:
		err = fmt.Errorf("the file holds %d rows but job %s delivered %d", rows, job.ID, want)
	}
	if err == nil && staged {
		if err = w.finish(); err == nil {
			var ra io.ReaderAt
			if ra, err = w.readerAt(); err == nil {
				rows, err = countRows(ctx, parquet.Decode[checkRow](ra, n), sink)
				if err != nil {
					err = fmt.Errorf("the file does not check out: %w", err)
				} else if rows != want {
					err = fmt.Errorf("the file holds %d rows but job %s delivered %d", rows, job.ID, want)
				}
			}
		}
	}
	if err != nil {
		w.abort() // nothing appears under the file's name
		return nil, err
	}
	size, etag, err := w.publish(ctx)
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", sh.File, err)
	}
	if size != n {
		return nil, fmt.Errorf("%s has %d bytes in the storage; %d were written", sh.File, size, n)
	}
	digest := encodeDigest(hashes)
	dsum := sha256.Sum256(digest)
	ids := &IDDigest{Count: int64(len(hashes)), Bytes: int64(len(digest)), SHA256: hex.EncodeToString(dsum[:])}
	if len(digest) <= inlineDigest {
		ids.Data = digest
	} else {
		ids.Object = shardKey(recordsDir, r.plan.index(sh.Name), ".ids")
		if err := r.st.b.put(ctx, ids.Object, digest, false); err != nil {
			return nil, fmt.Errorf("writing the id digest of shard %s: %w", sh.Name, err)
		}
	}
	return &landing{bytes: n, rows: rows, sum: hex.EncodeToString(sum.Sum(nil)), etag: etag, ids: ids}, nil
}

// progressWriter counts a download's bytes and reports them at most
// once every progressEvery bytes or progressPeriod, whichever comes first.
type progressWriter struct {
	n, last int64
	at      time.Time
	report  func(done int64)
}

// How often a download's progress is reported.
const (
	progressEvery  = 1 << 20
	progressPeriod = 200 * time.Millisecond
)

func (p *progressWriter) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	if now := time.Now(); p.n-p.last >= progressEvery || now.Sub(p.at) >= progressPeriod {
		p.last, p.at = p.n, now
		p.report(p.n)
	}
	return len(b), nil
}

// errDecoderDone ends the pipe into a decoder that read everything.
var errDecoderDone = errors.New("export: the decoder is done")

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
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

func sizeOf(st *lendgraph.DeliveryStatus) int64 {
	if st.Bytes > 0 {
		return st.Bytes
	}
	return -1
}
