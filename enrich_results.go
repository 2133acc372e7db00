package lendgraph

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/klauspost/compress/gzip"
)

// EnrichmentResultEntry is one property's result in a bulk enrichment
// job's results file. The file's layout is not documented; the typed fields
// are the ones a per-property result is expected to carry, and every other
// member is kept in Extra.
type EnrichmentResultEntry struct {
	PropertyID string `json:"propertyId"`
	// Persons is empty on a no-match or an error.
	Persons []Person `json:"persons"`
	// Reason is the pipeline path, when the file says.
	Reason     EnrichReason `json:"reason,omitempty"`
	Cached     bool         `json:"cached,omitzero"`
	Charged    bool         `json:"charged,omitzero"`
	EnrichedAt time.Time    `json:"enrichedAt,omitzero"`
	Source     string       `json:"source,omitempty"`
	// Error says why the property could not be enriched (unknown id, no
	// usable address), when it could not.
	Error string `json:"error,omitempty"`
	// Extra holds every other member the file holds.
	Extra Fields `json:",unknown"`
}

// Download writes the job's results file to w as delivered (its layout is
// not documented; the fake writes gzipped ndjson). It fetches the status
// first, because the link is re-signed on every fetch, and fetches it again
// when the link expires mid-download; the storage host never receives the
// API key. A job that has not completed gives an error (a *JobError for a
// failed or cancelled one).
func (j *EnrichJob) Download(ctx context.Context, w io.Writer, opts ...DownloadOption) (_ int64, err error) {
	plain, progress := splitOptions[DownloadProgress](opts)
	ctx, o, err := j.begin(ctx, "EnrichJob.Download", plain)
	if err != nil {
		return 0, err
	}
	defer func() { o.end(err) }()
	link, err := j.resultsLink(o)(ctx)
	if err != nil {
		return 0, err
	}
	if j.double != nil {
		rc, err := j.double.Open(ctx, j.ID)
		if err != nil {
			return 0, err
		}
		defer rc.Close()
		if progress != nil {
			w = &progressWriter{w: w, total: -1, progress: progress}
		}
		return io.Copy(w, rc)
	}
	return o.download(ctx, link, j.resultsLink(o), w, progress)
}

// begin starts the operation name of a method that reads the job's
// results, with the call's options. A test double's handle has no client:
// its operation only carries the settings.
func (j *EnrichJob) begin(ctx context.Context, name string, opts []Option) (context.Context, *operation, error) {
	if err := j.ready(); err != nil {
		return ctx, nil, err
	}
	if j.double != nil {
		cfg, err := waitSettings(nil, name, opts)
		if err != nil {
			return ctx, nil, err
		}
		return ctx, &operation{name: name, cfg: cfg}, checkCtx(ctx)
	}
	return j.client.begin(ctx, name, opts)
}

// ResultRows streams the job's results file and yields one typed entry a
// property (see DecodeEnrichmentResults).
//
// The sequence follows the package's iterator contract: every range
// downloads the file again and yields it from its first entry; ranges in
// several goroutines are independent; break or a panic in the loop body
// stops the download and returns with nothing left behind; cancelling ctx
// ends the sequence at once with an error matching ctx's error and cause.
func (j *EnrichJob) ResultRows(ctx context.Context, opts ...Option) iter.Seq2[EnrichmentResultEntry, error] {
	if err := checkCtx(ctx); err != nil {
		return errSeq[EnrichmentResultEntry](err)
	}
	return func(yield func(EnrichmentResultEntry, error) bool) {
		ctx, o, err := j.begin(ctx, "EnrichJob.ResultRows", opts)
		if err != nil {
			yield(EnrichmentResultEntry{}, err)
			return
		}
		var rows int64
		var failed error
		defer func() {
			o.watch().update(func(s *Summary) { s.Rows = rows })
			o.end(failed)
		}()
		fail := func(err error) {
			if cerr := ctxErr(ctx); cerr != nil {
				err = fmt.Errorf("lendgraph: reading the results of enrichment job %s: %w", j.ID, cerr)
			}
			failed = err
			yield(EnrichmentResultEntry{}, err)
		}
		link, err := j.resultsLink(o)(ctx)
		if err != nil {
			fail(err)
			return
		}
		var rc io.ReadCloser
		if j.double != nil {
			if rc, err = j.double.Open(ctx, j.ID); err != nil {
				fail(err)
				return
			}
		} else {
			rc = o.openDownload(ctx, link, j.resultsLink(o), -1)
		}
		defer rc.Close()
		done := ctx.Done()
		for e, err := range decodeEnrichmentResults(rc) {
			select {
			case <-done:
				err = ctxErr(ctx)
			default:
			}
			if err != nil {
				fail(err)
				return
			}
			rows++
			if !yield(e, nil) {
				return
			}
		}
	}
}

// resultsLink returns the function that fetches the status in operation o
// (re-signing the link) and returns the newest results link of a
// completed job.
func (j *EnrichJob) resultsLink(o *operation) linkFunc {
	return func(ctx context.Context) (SignedURL, error) {
		var st *EnrichJobStatus
		var err error
		if j.double != nil {
			st, err = j.double.Status(ctx, j.ID)
		} else {
			st = new(EnrichJobStatus)
			err = j.status(ctx, o, st)
		}
		if err != nil {
			return "", err
		}
		switch {
		case st.Status == JobFailed || st.Status == JobCancelled:
			return "", &JobError{Kind: "enrichment", JobID: j.ID, Status: string(st.Status), Message: st.Error}
		case st.Status != JobCompleted:
			return "", fmt.Errorf("lendgraph: enrichment job %s is %s: its results exist once it completed (Wait first)", j.ID, st.Status)
		case st.ResultsURL == "" && j.double == nil:
			return "", fmt.Errorf("lendgraph: enrichment job %s completed without a resultsUrl", j.ID)
		}
		return st.ResultsURL, nil
	}
}

// DecodeEnrichmentResults reads a bulk enrichment results file and yields
// one entry a property, streaming. It accepts newline-delimited JSON
// objects or one JSON array of objects, either of them gzipped or not
// (told apart from the bytes, not a file name). Anything else fails with an
// error naming the line or array element; the error is yielded once, last,
// and keeps the reader's error in its chain (errors.Is and errors.As).
//
// The sequence follows the package's iterator contract. r is read on the
// loop's goroutine, so stopping the loop returns at once. Ranging it again
// reads r again from where the first range started when r is an
// io.Seeker; any other reader cannot be rewound, and a second range yields
// an error instead of entries. Two ranges at the same time are refused
// (the second yields an error): they would share r.
func DecodeEnrichmentResults(r io.Reader) iter.Seq2[EnrichmentResultEntry, error] {
	if r == nil {
		return errSeq[EnrichmentResultEntry](errNilReader("r"))
	}
	return replayable(r, decodeEnrichmentResults)
}

// decodeEnrichmentResults is DecodeEnrichmentResults for one range over r.
func decodeEnrichmentResults(r io.Reader) iter.Seq2[EnrichmentResultEntry, error] {
	return func(yield func(EnrichmentResultEntry, error) bool) {
		fail := func(at RowError, format string, a ...any) {
			at.Format, at.Err = "enrichment results", fmt.Errorf(format, a...)
			yield(EnrichmentResultEntry{}, &at)
		}
		br := bufio.NewReaderSize(r, 64<<10)
		if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
			zr, err := gzip.NewReader(br)
			if err != nil {
				fail(RowError{}, "reading the gzip header: %w", err)
				return
			}
			defer zr.Close()
			// A decompression cap: a small gzip bomb must not decode for hours.
			br = bufio.NewReaderSize(&capReader{r: zr, left: maxResultsSize, tooLarge: errors.New("the results file (decompressed) is larger than the limit")}, 64<<10)
		}
		first, err := skipSpace(br)
		switch {
		case errors.Is(err, io.EOF):
			return // an empty file holds no results
		case err != nil:
			fail(RowError{}, "reading: %w", err)
		case first == '[':
			decodeResultArray(br, yield, fail)
		case first == '{':
			decodeResultLines(br, yield, fail)
		default:
			head, _ := br.Peek(40)
			fail(RowError{}, "expected newline-delimited JSON objects or a JSON array (gzipped or not), but the data starts with %q", head)
		}
	}
}

// Bounds of a results file: one entry (a line or an array element), and
// the whole file once decompressed (a variable for tests).
const maxResultEntry = 16 << 20

var maxResultsSize int64 = 2 << 30

// skipSpace skips whitespace and a byte order mark and peeks the next byte.
func skipSpace(br *bufio.Reader) (byte, error) {
	if bom, _ := br.Peek(3); bytes.Equal(bom, []byte{0xEF, 0xBB, 0xBF}) {
		_, _ = br.Discard(3)
	}
	for {
		b, err := br.Peek(1)
		if err != nil {
			return 0, err
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			_, _ = br.Discard(1)
			continue
		}
		return b[0], nil
	}
}

func decodeResultLines(br *bufio.Reader, yield func(EnrichmentResultEntry, error) bool, fail func(RowError, string, ...any)) {
	row := int64(1)
	for line := int64(1); ; line++ {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: collect it whole, up to the cap.
			long := bytes.Clone(b)
			for errors.Is(err, bufio.ErrBufferFull) && len(long) <= maxResultEntry {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			if len(long) > maxResultEntry {
				fail(RowError{Row: row, Line: line}, "the line is longer than %d bytes", maxResultEntry)
				return
			}
			b = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			fail(RowError{Row: row, Line: line}, "%w", err)
			return
		}
		if t := bytes.TrimSpace(b); len(t) > 0 {
			var e EnrichmentResultEntry
			if t[0] != '{' {
				fail(RowError{Row: row, Line: line}, "expected a JSON object, got %q", t[:min(len(t), 40)])
				return
			}
			if derr := unmarshal(t, &e); derr != nil {
				fail(RowError{Row: row, Line: line}, "%w", derr)
				return
			}
			if !yield(e, nil) {
				return
			}
			row++
		}
		if err != nil { // io.EOF
			return
		}
	}
}

func decodeResultArray(br *bufio.Reader, yield func(EnrichmentResultEntry, error) bool, fail func(RowError, string, ...any)) {
	budget := &capReader{r: br, left: maxResultEntry, tooLarge: errors.New("one array element is larger than the limit")}
	dec := jsontext.NewDecoder(budget)
	if _, err := dec.ReadToken(); err != nil {
		fail(RowError{}, "reading the array: %w", err)
		return
	}
	for i := 0; ; i++ {
		// Each element may read up to the cap, plus what the decoder
		// buffered ahead for the next ones.
		budget.left = 2 * maxResultEntry
		switch k := dec.PeekKind(); k {
		case ']':
			_, _ = dec.ReadToken()
			if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
				fail(RowError{Offset: dec.InputOffset()}, "unexpected data after the array of %d elements", i)
			}
			return
		case '{':
			var e EnrichmentResultEntry
			if err := decodeFrom(dec, &e); err != nil {
				fail(RowError{Row: int64(i) + 1, Offset: dec.InputOffset()}, "%w", err)
				return
			}
			if !yield(e, nil) {
				return
			}
		case 0:
			_, err := dec.ReadToken()
			fail(RowError{Row: int64(i) + 1, Offset: dec.InputOffset()}, "%w", err)
			return
		default:
			fail(RowError{Row: int64(i) + 1, Offset: dec.InputOffset()}, "expected a JSON object, got a JSON %v", k)
			return
		}
	}
}
