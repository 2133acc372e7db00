package lendgraph

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// linkFunc fetches a freshly signed link (a job status fetch: the reference
// re-signs resultsUrl on every one).
type linkFunc func(ctx context.Context) (SignedURL, error)

// maxStalls is how many attempts in a row may fail without a single new
// byte before a download gives up.
const maxStalls = 5

// download writes the object behind a signed link to w. The link's host
// gets no API credential and no Authorization header. When the connection
// drops it resumes with a Range request from the bytes already written;
// when the link has expired (or the host refuses it) it asks link for a
// freshly signed one. A server that ignores Range is read from the start
// with the bytes already written skipped. The final length is checked
// against the size the server announced.
func (c *Client) download(ctx context.Context, first SignedURL, link linkFunc, w io.Writer) (int64, error) {
	return c.downloadSized(ctx, first, link, w, -1)
}

// openDownload streams the object behind a signed link (see
// downloadSized): the download runs in a goroutine writing into a pipe
// that the caller reads. Closing the stream cancels the download and waits
// for the goroutine, so none outlives it; a failed download is the read
// error after the bytes that did arrive.
func (c *Client) openDownload(ctx context.Context, first SignedURL, link linkFunc, size int64) io.ReadCloser {
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := c.downloadSized(ctx, first, link, pw, size)
		pw.CloseWithError(err) // nil: the reader sees io.EOF
	}()
	return &downloadStream{PipeReader: pr, cancel: cancel, done: done}
}

// downloadStream is the reading end of openDownload.
type downloadStream struct {
	*io.PipeReader
	cancel context.CancelFunc
	done   chan struct{}
}

var errStreamClosed = errors.New("lendgraph: download stream closed")

// Close stops the download and waits for it to end.
func (d *downloadStream) Close() error {
	d.cancel()
	_ = d.PipeReader.CloseWithError(errStreamClosed)
	<-d.done
	return nil
}

// downloadSized is download for a file whose size the caller knows (a
// delivery's status record says it): when the host announces no length (a
// close-delimited body), a connection cut short is still told from the end
// of the file. size is -1 when unknown.
func (c *Client) downloadSized(ctx context.Context, first SignedURL, link linkFunc, w io.Writer, size int64) (int64, error) {
	if err := c.ready(ctx); err != nil {
		return 0, err
	}
	var written int64
	cur := first
	stalls := 0
	var lastErr error
	for {
		if stalls >= maxStalls {
			return written, &DownloadError{Written: written, Size: size, Err: lastErr}
		}
		if stalls > 0 {
			if retry.Wait(ctx, c.policy.Jitter(stalls-1)) != nil {
				return written, &DownloadError{Written: written, Size: size, Err: ctxErr(ctx)}
			}
		}
		if cur == "" {
			l, err := link(ctx)
			if err != nil {
				return written, &DownloadError{Written: written, Size: size, Err: fmt.Errorf("fetching a fresh link: %w", err)}
			}
			if l == "" {
				return written, &DownloadError{Written: written, Size: size, Err: errors.New("the job has no results link")}
			}
			cur = l
		}
		n, total, done, refresh, err := c.downloadOnce(ctx, cur, written, w, size)
		if total >= 0 {
			size = total
		}
		if n > 0 {
			stalls = 0
		}
		written += n
		if done {
			return written, nil
		}
		var werr *writeError
		if cerr := ctxErr(ctx); cerr != nil {
			return written, &DownloadError{Written: written, Size: size, Err: cerr}
		}
		if errors.As(err, &werr) {
			return written, &DownloadError{Written: written, Size: size, Err: err}
		}
		var perm *permanentError
		if errors.As(err, &perm) {
			return written, &DownloadError{Written: written, Size: size, Err: perm.err}
		}
		if refresh {
			cur = ""
		}
		lastErr = err
		stalls++
	}
}

type writeError struct{ err error }

func (e *writeError) Error() string { return "writing: " + e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }

// downloadOnce makes one ranged GET from offset. It reports the bytes
// written, the object's total size (-1 unknown), whether the object is
// complete, and whether the link needs re-signing before the next attempt.
func (c *Client) downloadOnce(ctx context.Context, link SignedURL, offset int64, w io.Writer, want int64) (n, total int64, done, refresh bool, err error) {
	total = -1
	if err := c.checkLinkString("results link", link.Reveal()); err != nil {
		return 0, -1, false, false, &permanentError{err}
	}
	req, err := retryablehttp.NewRequestWithContext(retry.WithKind(streaming(ctx), retry.Idempotent), http.MethodGet, link.Reveal(), nil)
	if err != nil {
		return 0, -1, false, false, &permanentError{fmt.Errorf("bad link %s: %v", link, redactError(err))}
	}
	req.Header.Set("User-Agent", c.userAgent)
	// Ask for the stored bytes as they are: offsets for Range then count the
	// same bytes, and a gzip file stays gzip (Go's transport would otherwise
	// ask for gzip and silently decode it).
	req.Header.Set("Accept-Encoding", "identity")
	if offset > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(offset, 10)+"-")
	}
	resp, err := c.plain.Do(req)
	if err != nil {
		if resp != nil {
			resp.Body.Close() // a response that came with an error (a cancel right after the headers)
		}
		return 0, -1, false, false, redactError(attemptTimeout(err))
	}
	defer resp.Body.Close()
	if d, ok := retry.RetryAfter(resp.Header, c.now()); ok && resp.StatusCode >= 300 {
		base := &APIError{StatusCode: resp.StatusCode, Method: http.MethodGet, Path: req.URL.Path, Message: "storage host"}
		if rl := c.refuseWait(base, d); rl != nil {
			return 0, -1, false, false, &permanentError{rl}
		}
	}
	skip := int64(0)
	switch {
	case resp.StatusCode == http.StatusOK:
		total = resp.ContentLength
		skip = offset // the host ignored Range: start over, skipping what we have
	case resp.StatusCode == http.StatusPartialContent:
		start, t, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != offset {
			return 0, -1, false, false, fmt.Errorf("storage host answered range %q to a request from byte %d", resp.Header.Get("Content-Range"), offset)
		}
		total = t
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		_, t, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if ok && t == offset {
			return 0, t, true, false, nil
		}
		return 0, -1, false, true, fmt.Errorf("storage host refused range from byte %d", offset)
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized:
		// Expired or refused signature: ask for a freshly signed link.
		b, _ := readCapped(resp.Body, 4<<10)
		return 0, -1, false, true, fmt.Errorf("storage host answered %d (link expired or refused)%s", resp.StatusCode, storageCode(b))
	case resp.StatusCode == http.StatusNotFound:
		return 0, -1, false, false, &permanentError{fmt.Errorf("storage host answered 404: the file is gone (past the 30-day retention?): %w", ErrNotFound)}
	default:
		return 0, -1, false, false, fmt.Errorf("storage host answered %d", resp.StatusCode)
	}
	if want >= 0 && total >= 0 && total != want {
		// Not the file the job wrote: a proxy's or portal's page, most likely.
		return 0, -1, false, false, &permanentError{fmt.Errorf("storage host announced %d bytes (%s) for a file of %d bytes",
			total, resp.Header.Get("Content-Type"), want)}
	}
	if skip > 0 {
		if _, err := io.CopyN(io.Discard, resp.Body, skip); err != nil {
			return 0, total, false, false, fmt.Errorf("re-reading the first %d bytes: %w", skip, redactError(err))
		}
	}
	if total < 0 {
		total = want
	}
	n, err = copyTo(w, resp.Body)
	if err != nil {
		return n, total, false, false, attemptTimeout(err)
	}
	if total >= 0 && offset+n != total {
		return n, total, false, false, fmt.Errorf("connection closed at byte %d of %d", offset+n, total)
	}
	return n, total, true, false, nil
}

// copyTo copies src to dst, telling write failures (the caller's) from
// read failures (the network's).
func copyTo(dst io.Writer, src io.Reader) (int64, error) {
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, rerr := src.Read(buf)
		if k > 0 {
			wk, werr := dst.Write(buf[:k])
			n += int64(wk)
			if werr != nil {
				return n, &writeError{werr}
			}
			if wk < k {
				return n, &writeError{io.ErrShortWrite}
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, redactError(rerr)
		}
	}
}

// storageCode names the error code of an S3-style XML error body. Only the
// code: such bodies can echo the request's signature (SignatureProvided,
// StringToSign), which must not reach an error text.
func storageCode(body []byte) string {
	_, rest, ok := strings.Cut(string(body), "<Code>")
	code, _, ok2 := strings.Cut(rest, "</Code>")
	if !ok || !ok2 || len(code) > 64 || strings.ContainsAny(code, "<>") {
		return ""
	}
	return ": " + code
}

// parseContentRange reads "bytes start-end/total".
func parseContentRange(h string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(h, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	t, err := strconv.ParseInt(tot, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	if rng == "*" {
		return 0, t, true
	}
	s, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	st, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return st, t, true
}
