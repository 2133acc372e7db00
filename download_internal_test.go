package lendgraph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// objectHost serves data at every path with ETag etag(), honouring Range
// unless ignoreRange; it counts requests.
type objectHost struct {
	data        []byte
	ignoreRange bool
	etag        func(n int32) string // ETag of the n-th request (from 1)
	requests    atomic.Int32
}

func (h *objectHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := h.requests.Add(1)
	if h.etag != nil {
		w.Header().Set("ETag", h.etag(n))
	}
	if h.ignoreRange {
		w.Header().Set("Content-Length", strconv.Itoa(len(h.data)))
		_, _ = w.Write(h.data)
		return
	}
	http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(h.data))
}

func testObject(t *testing.T, h *objectHost) (*operation, SignedURL, linkFunc) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := NewClient(WithAPIKey("k"), WithBaseURL("http://127.0.0.1:1"), WithDownloadConnections(4),
		WithRetryBackoff(time.Millisecond, 5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	c.part = 32 << 10
	link := SignedURL(srv.URL + "/file?X-Signature=s")
	cfg := c.defaults
	return &operation{c: c, name: "test", cfg: &cfg}, link, func(context.Context) (SignedURL, error) { return link, nil }
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// A host that ignores Range answers every part with the whole file: the
// download notices at the first answer and fetches the file over one
// connection instead of once per part.
func TestParallel_RangeIgnoredFallsBack(t *testing.T) {
	data := randomBytes(300 << 10)
	size := int64(len(data))
	ctx := context.Background()
	for _, mode := range []string{"Download", "stream", "file"} {
		// A host of its own for each: requests a cancelled part sent late
		// do not count for the next.
		h := &objectHost{data: data, ignoreRange: true}
		o, first, link := testObject(t, h)
		var got []byte
		var err error
		switch mode {
		case "Download":
			var buf bytes.Buffer
			_, err = o.downloadSized(ctx, first, link, &buf, size, nil)
			got = buf.Bytes()
		case "stream":
			rc := o.openDownload(ctx, first, link, size)
			got, err = io.ReadAll(rc)
			rc.Close()
		case "file":
			f, ferr := os.CreateTemp(t.TempDir(), "obj")
			if ferr != nil {
				t.Fatal(ferr)
			}
			_, err = o.downloadTo(ctx, f, first, link, size)
			f.Close()
			got, _ = os.ReadFile(f.Name())
		}
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: %d bytes of %d, %v", mode, len(got), size, err)
		}
		// One request a connection finds out; one more fetches the file.
		if n := h.requests.Load(); n > int32(o.cfg.downloadConns)+1 {
			t.Fatalf("%s: %d requests, want at most %d", mode, n, o.cfg.downloadConns+1)
		}
	}
}

// Every answer must describe the object the first one did: a file
// replaced during the download is an error, not a mix of two versions.
func TestDownload_RefusesChangedObject(t *testing.T) {
	h := &objectHost{data: randomBytes(300 << 10), etag: func(n int32) string {
		if n <= 2 {
			return `"v1"`
		}
		return `"v2"`
	}}
	o, first, link := testObject(t, h)
	ctx := context.Background()
	_, err := o.downloadSized(ctx, first, link, io.Discard, int64(len(h.data)), nil)
	var de *DownloadError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), `file changed on the storage host during the download (ETag "v`) {
		t.Fatalf("parallel: %v", err)
	}

	// Over one connection: a resume after a cut meets the new version.
	o.cfg.downloadConns = 1
	cut := &cutOnce{h: &objectHost{data: h.data, etag: func(int32) string { return `"v2"` }}}
	srv := httptest.NewServer(cut)
	defer srv.Close()
	first = SignedURL(srv.URL + "/f")
	_, err = o.downloadSized(ctx, first, func(context.Context) (SignedURL, error) { return first, nil }, io.Discard, int64(len(h.data)), nil)
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "changed") || de.Written != int64(len(h.data)/2) {
		t.Fatalf("one connection: %v", err)
	}
}

// cutOnce sends half the file and closes the connection the first time,
// then serves h.
type cutOnce struct {
	h    *objectHost
	done atomic.Bool
}

func (c *cutOnce) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if c.done.Swap(true) {
		c.h.ServeHTTP(w, r)
		return
	}
	c.h.requests.Add(1)
	w.Header().Set("ETag", `"v1"`)
	w.Header().Set("Content-Length", strconv.Itoa(len(c.h.data)))
	_, _ = w.Write(c.h.data[:len(c.h.data)/2])
	w.(http.Flusher).Flush()
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// A host that caps the length of a range: the rest of each part is asked
// for again.
func TestParallel_ShortRangesCompleted(t *testing.T) {
	h := &objectHost{data: randomBytes(300 << 10)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a, b int
		if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &a, &b); err == nil && b-a >= 10_000 {
			r.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", a, a+9_999))
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	o, _, _ := testObject(t, h)
	first := SignedURL(srv.URL + "/f")
	var buf bytes.Buffer
	n, err := o.downloadSized(context.Background(), first, func(context.Context) (SignedURL, error) { return first, nil }, &buf, int64(len(h.data)), nil)
	if err != nil || n != int64(len(h.data)) || !bytes.Equal(buf.Bytes(), h.data) {
		t.Fatalf("%d bytes, %v", n, err)
	}
}

// Many ranges meeting a refused link at once fetch one fresh link between
// them.
func TestLinkSource_RefreshesOnceForAllRanges(t *testing.T) {
	var fetches atomic.Int32
	release := make(chan struct{})
	src := newLinkSource("l1", func(ctx context.Context) (SignedURL, error) {
		fetches.Add(1)
		<-release
		return "l2", nil
	}, nil)
	ctx := context.Background()
	l, gen, err := src.get(ctx)
	if err != nil || l != "l1" {
		t.Fatal(l, err)
	}
	got := make(chan SignedURL, 8)
	for range 8 {
		go func() {
			src.expire(gen)
			l, _, err := src.get(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	for range 8 {
		if l := <-got; l != "l2" {
			t.Fatalf("link %q", l)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
	// A failed refresh reaches every waiter; the next get tries again.
	src.expire(gen + 1)
	src.fetch = func(context.Context) (SignedURL, error) { fetches.Add(1); return "", errors.New("API down") }
	if _, _, err := src.get(ctx); err == nil || !strings.Contains(err.Error(), "API down") {
		t.Fatal(err)
	}
	src.fetch = func(context.Context) (SignedURL, error) { fetches.Add(1); return "l3", nil }
	if l, _, err := src.get(ctx); err != nil || l != "l3" {
		t.Fatal(l, err)
	}
}

// TestPartFor_WholeRounds: a parallel download's spans are at most the
// part size asked for, and as many as a whole number of rounds of one a
// connection (a last round of fewer leaves connections to steal in small
// pieces), for Download's parts and a decoder's.
func TestPartFor_WholeRounds(t *testing.T) {
	for _, conns := range []int{2, 3, 8, 16} {
		c := &operation{c: &Client{part: defaultPartSize}, cfg: &callConfig{downloadConns: conns}}
		for _, size := range []int64{16 << 20, 16<<20 + 1, 24<<20 + 12345, 43_601_234, 36_881_059, 64<<20 + 7, 256<<20 + 999} {
			for _, max := range []int64{c.streamPart(), c.c.part, c.decodePart(size)} {
				part := c.partFor(size, max)
				n := ceilDiv(size, part)
				if part > max || n%int64(conns) != 0 {
					t.Errorf("%d connections, %d bytes, parts of at most %d: %d parts of %d", conns, size, max, n, part)
				}
			}
			if p := c.decodePart(size); ceilDiv(size, p)%int64(conns) != 0 {
				t.Errorf("%d connections, %d bytes: a decoder's %d parts of %d", conns, size, ceilDiv(size, p), p)
			}
		}
	}
	c := &operation{c: &Client{part: defaultPartSize}, cfg: &callConfig{downloadConns: 8}}
	if p := c.partFor(43_601_234, c.streamPart()); ceilDiv(43_601_234, p) != 16 {
		t.Errorf("43.6 MB on 8 connections: parts of %d, want 16 of them", p)
	}
}

// TestRelay_OneSlowAnswerIsNotTheLatency: the latency the relay waits for
// is the median of the latest n: one first byte after seconds (a store's
// rare slow answer) does not make the next requests go out that early,
// and what most requests took is what it waits for.
func TestRelay_OneSlowAnswerIsNotTheLatency(t *testing.T) {
	r := newRelay(8)
	for _, ms := range []int{20, 5, 10, 2000, 15, 10, 12, 8} {
		r.measured(time.Duration(ms) * time.Millisecond)
	}
	if got := r.latency(); got != 12*time.Millisecond {
		t.Errorf("latency %v after one slow answer among eight, want the median, 12ms", got)
	}
	for range 8 { // the ring forgets the older ones
		r.measured(3 * time.Millisecond)
	}
	if got := r.latency(); got != 3*time.Millisecond {
		t.Errorf("latency %v, want 3ms", got)
	}
}

// TestTapered: a decoded download's spans cover the file in order, none
// larger than its part, in whole rounds; the last round's are less than
// twice the least, each earlier round of the tail twice as large as the
// next: what lands after the decoder's last byte is small.
func TestTapered(t *testing.T) {
	for _, n := range []int64{1, 2, 8, 16} {
		c := &operation{c: &Client{part: defaultPartSize}, cfg: &callConfig{downloadConns: int(n)}}
		for _, size := range []int64{1, 100, 16 << 20, 20_412_937, 24<<20 + 12345, 64<<20 + 7, 256<<20 + 999} {
			part, least := c.decodePart(size), c.tailPart()
			spans := tapered(size, part, n, least)
			off := int64(0)
			for i, sp := range spans {
				if sp.off != off || sp.end <= sp.off || sp.end-sp.off > part {
					t.Fatalf("%d connections, %d bytes: span %d is %v after %d (parts of %d)", n, size, i, sp, off, part)
				}
				off = sp.end
			}
			if off != size {
				t.Fatalf("%d connections, %d bytes: the spans end at %d", n, size, off)
			}
			if len(spans)%int(n) != 0 && size >= n*part {
				t.Errorf("%d connections, %d bytes: %d spans, not whole rounds", n, size, len(spans))
			}
			last := spans[max(len(spans)-int(n), 0):]
			for _, sp := range last {
				if l := sp.end - sp.off; l >= 2*least {
					t.Errorf("%d connections, %d bytes: a last span of %d, least %d (parts of %d)", n, size, l, least, part)
				}
			}
			if want := ceilDiv(size, part) + n*int64(bits.Len64(uint64(part/least))); int64(len(spans)) > want {
				t.Errorf("%d connections, %d bytes: %d spans, want at most %d", n, size, len(spans), want)
			}
		}
	}
	// 20 MB on 8 connections: 32 parts of 638 KB, the last round's 8
	// (5.1 MB) in rounds of 319, 160 and 160 KB.
	spans := tapered(20_412_937, 637_905, 8, 128<<10)
	var sizes []int64
	for _, sp := range spans[24:] {
		sizes = append(sizes, sp.end-sp.off)
	}
	if len(spans) != 48 || sizes[0] != 318_952 || sizes[8] != 159_476 || sizes[len(sizes)-1] > 160_000 {
		t.Errorf("20 MB: %d spans, the last round's cut into %v", len(spans), sizes)
	}
}
