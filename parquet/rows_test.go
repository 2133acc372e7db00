package parquet_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	"github.com/lendgraph/lendgraph-go/parquet"
)

// gate holds back the storage host's bytes from offset cut on: a response
// whose range starts before cut passes the bytes up to cut, then waits
// until open is closed (or its request ends); fail, when set, ends it
// there with that error instead, and a request from cut on (but for the
// file's tail) is answered 404. Otherwise responses from cut on pass.
type gate struct {
	base http.RoundTripper
	host string
	cut  int64
	fail error
	// tailRead, when set, is closed once the file's tail (a ranged
	// request from cut on that ends at the file's end) has been read:
	// fail waits for it, so that the footer is on disk before the cut.
	tailRead chan struct{}

	once, tailOnce sync.Once
	open           chan struct{}
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := g.base.RoundTrip(r)
	if err != nil || r.URL.Host != g.host || resp.StatusCode/100 != 2 {
		return resp, err
	}
	var start int64
	if rg := r.Header.Get("Range"); rg != "" {
		start, _ = strconv.ParseInt(strings.TrimSuffix(strings.SplitN(strings.TrimPrefix(rg, "bytes="), "-", 2)[0], "-"), 10, 64)
	}
	if g.fail != nil && start >= g.cut && !strings.HasSuffix(r.Header.Get("Range"), "-"+strconv.FormatInt(resp.ContentLength+start-1, 10)) {
		resp.Body.Close()
		return &http.Response{StatusCode: http.StatusNotFound, Body: io.NopCloser(strings.NewReader("gone")), Header: http.Header{}, Request: r}, nil
	}
	if start < g.cut {
		resp.Body = &gatedBody{ReadCloser: resp.Body, left: g.cut - start, g: g, ctx: r.Context()}
	} else if g.tailRead != nil {
		resp.Body = &tailBody{ReadCloser: resp.Body, g: g}
	}
	return resp, nil
}

// tailBody closes its gate's tailRead at the end of the tail.
type tailBody struct {
	io.ReadCloser
	g *gate
}

func (b *tailBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.g.tailOnce.Do(func() { close(b.g.tailRead) })
	}
	return n, err
}

type gatedBody struct {
	io.ReadCloser
	left int64
	g    *gate
	ctx  context.Context
}

func (b *gatedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		if b.g.fail != nil {
			if b.g.tailRead != nil {
				select {
				case <-b.g.tailRead:
				case <-b.ctx.Done():
					return 0, b.ctx.Err()
				}
			}
			return 0, b.g.fail
		}
		select {
		case <-b.g.open:
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
		return b.ReadCloser.Read(p)
	}
	n, err := b.ReadCloser.Read(p[:min(int64(len(p)), b.left)])
	b.left -= int64(n)
	return n, err
}

// parquetStream is a fake serving a parquet delivery of 50,000 rows (row
// groups of 20,000: 3 groups), the file's bytes and its rows.
func parquetStream(t *testing.T) (srv *lendgraphtest.Server, id string, file []byte, want []lendgraph.Agent) {
	t.Helper()
	srv = lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(50_000))
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 100_000})
	c := srv.Client(lendgraph.WithDownloadConnections(1))
	job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet})
	var buf bytes.Buffer
	if _, err := job.Download(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	want = collect(t, parquet.Decode[lendgraph.Agent](bytes.NewReader(buf.Bytes()), int64(buf.Len())))
	if len(want) != 50_000 {
		t.Fatalf("%d rows", len(want))
	}
	return srv, job.ID, buf.Bytes(), want
}

// TestParquetRows_DecodesWhileDownloading holds back the last 40% of the
// file: the first row group's rows must come out before those bytes do,
// so the decoding overlaps the download (before, parquet.Rows decoded only
// once the whole file was on disk). The footer comes first, on a ranged
// request for the file's tail, which the storage host's log shows.
func TestParquetRows_DecodesWhileDownloading(t *testing.T) {
	srv, id, file, want := parquetStream(t)
	size := int64(len(file))
	for _, conns := range []int{1, 4} {
		t.Run(fmt.Sprintf("connections=%d", conns), func(t *testing.T) {
			g := &gate{base: http.DefaultTransport, host: strings.TrimPrefix(srv.StorageURL(), "http://"), cut: size * 6 / 10, open: make(chan struct{})}
			defer g.release()
			c := srv.Client(lendgraph.WithDownloadConnections(conns), lendgraph.WithHTTPClient(&http.Client{Transport: g}))
			setPartSize(t, c, partSize)
			srv.ResetRequests()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var got []lendgraph.Agent
			for a, err := range parquet.Rows(ctx, c.Agents.DeliveryJob(id)) {
				if err != nil {
					t.Fatalf("after %d rows: %v", len(got), err)
				}
				got = append(got, a)
				if len(got) == 20_000 {
					g.release() // the first row group came out while 40% of the file was held back
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%d rows, not those of the file (%d)", len(got), len(want))
			}
			tail := false
			for _, r := range srv.Requests() {
				if rg := r.Header.Get("Range"); r.Listener == "storage" && strings.HasPrefix(rg, "bytes=") && strings.HasSuffix(rg, "-"+strconv.FormatInt(size-1, 10)) {
					off, _ := strconv.ParseInt(strings.SplitN(strings.TrimPrefix(rg, "bytes="), "-", 2)[0], 10, 64)
					tail = tail || off >= size/2
				}
			}
			if !tail {
				t.Fatalf("no ranged request for the file's tail reached the storage host")
			}
		})
	}
}

// TestParquetRows_DownloadFailsMidway: the rows of the row groups that
// landed come out, then the download's error, as a *DownloadError; the
// temporary file is gone when the loop ends.
func TestParquetRows_DownloadFailsMidway(t *testing.T) {
	srv, id, file, want := parquetStream(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	g := &gate{base: http.DefaultTransport, host: strings.TrimPrefix(srv.StorageURL(), "http://"), cut: int64(len(file)) * 6 / 10, open: make(chan struct{}),
		fail: errors.New("connection reset by the test"), tailRead: make(chan struct{})}
	c := srv.Client(lendgraph.WithDownloadConnections(1), lendgraph.WithHTTPClient(&http.Client{Transport: g}), lendgraph.WithMaxRetries(0),
		lendgraph.WithRetryBackoff(time.Millisecond, time.Millisecond))
	var got []lendgraph.Agent
	var last error
	for a, err := range parquet.Rows(context.Background(), c.Agents.DeliveryJob(id)) {
		if err != nil {
			last = err
			break
		}
		got = append(got, a)
	}
	var de *lendgraph.DownloadError
	if !errors.As(last, &de) {
		t.Fatalf("after %d rows: %v, want a *DownloadError", len(got), last)
	}
	if len(got) < 20_000 || !reflect.DeepEqual(got, want[:len(got)]) {
		t.Fatalf("%d rows before the error (want the first row group's 20,000 at least, as in the file)", len(got))
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// TestParquetRows_BreakWhileWaiting breaks out of the loop, panics in it
// and cancels the context while the decoder waits for bytes that do not
// come (until the test ends): Rows returns at once, with no goroutine
// (goleak, TestMain) or file left.
func TestParquetRows_BreakWhileWaiting(t *testing.T) {
	srv, id, file, _ := parquetStream(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, how := range []string{"break", "cancel", "panic"} {
		t.Run(how, func(t *testing.T) {
			g := &gate{base: http.DefaultTransport, host: strings.TrimPrefix(srv.StorageURL(), "http://"), cut: int64(len(file)) * 6 / 10, open: make(chan struct{})}
			defer g.release()
			c := srv.Client(lendgraph.WithDownloadConnections(1), lendgraph.WithHTTPClient(&http.Client{Transport: g}))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := 0
			var last error
			// Without the waits ended, Rows returns once the held bytes
			// come: release them after a while, and fail.
			watch := time.AfterFunc(10*time.Second, func() {
				t.Errorf("%s: Rows had not returned after 10 s", how)
				g.release()
			})
			defer watch.Stop()
			recovered := func() (r any) {
				defer func() { r = recover() }()
				for _, err := range parquet.Rows(ctx, c.Agents.DeliveryJob(id)) {
					if err != nil {
						last = err
						break
					}
					if n++; n == 20_000 {
						switch how {
						case "break":
							return nil
						case "panic":
							panic("loop body")
						}
						// The next rows wait for bytes held back.
						go func() { time.Sleep(20 * time.Millisecond); cancel() }()
					}
				}
				return nil
			}()
			if (how == "panic") != (recovered != nil) {
				t.Fatalf("recovered %v", recovered)
			}
			switch {
			case how != "cancel" && (n != 20_000 || last != nil):
				t.Fatalf("%d rows, %v", n, last)
			case how == "cancel" && !errors.Is(last, context.Canceled):
				t.Fatalf("after %d rows: %v, want context.Canceled", n, last)
			}
			if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
				t.Fatalf("left behind: %v", left)
			}
		})
	}
}

// TestParquetRows_RandomStopsUnderFaults ranges parquet.Rows over a file of
// three row groups (the footer fetched first, groups decoded as they land)
// through the fault proxy, which faults a sixth of the requests (cut
// bodies, resets, stalls before the headers or mid-body), and breaks,
// panics, cancels at a random row or moment, or reads to the end: the rows
// are the file's, in order; the loop returns soon after the stop; no
// goroutine (noLeaks) or temporary file is left.
func TestParquetRows_RandomStopsUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: random faults on a 50,000-row file")
	}
	noLeaks(t)
	srv, id, _, want := parquetStream(t)
	proxy := newFaultProxy(t)
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	rng, faultRng := chaosRands(t)
	faults := []proxyFault{
		{Kind: pfStallBody, Delay: 4 * time.Second},
		{Kind: pfStallHead, Delay: 150 * time.Millisecond},
		{Kind: pfCutBody},
		{Kind: pfResetBefore},
		{Kind: pfResetAfter},
	}
	const bound = 1200 * time.Millisecond
	for round := range envInt("LENDGRAPH_CHAOS_ROUNDS", 6) {
		fault := faults[rng.IntN(len(faults))]
		var mu sync.Mutex
		proxy.SetScript(func(r *http.Request, _ int) proxyFault {
			mu.Lock()
			defer mu.Unlock()
			if r.URL.Host == strings.TrimPrefix(srv.StorageURL(), "http://") && faultRng.IntN(6) == 0 {
				return fault
			}
			return proxyFault{}
		})
		conns := []int{1, 4}[rng.IntN(2)]
		c := proxy.Client(srv, lendgraph.WithMaxRetries(8), lendgraph.WithAttemptTimeout(2500*time.Millisecond),
			lendgraph.WithDownloadConnections(conns))
		setPartSize(t, c, 1<<20)
		action := []string{"break", "panic", "cancel in the loop", "cancel at a random moment", "read to the end"}[rng.IntN(5)]
		at := 1 + rng.IntN(len(want)-1)
		delay := time.Duration(rng.IntN(600)) * time.Millisecond
		desc := fmt.Sprintf("round %d: %s at row %d (or after %s) under %q, %d connections", round, action, at, delay, fault.Kind, conns)

		ctx, cancel := context.WithCancel(context.Background())
		got, stopped, took, last := rangeStopping(parquet.Rows(ctx, c.Agents.DeliveryJob(id)), action, at, delay, cancel)
		cancel()
		if stopped && took > bound {
			t.Errorf("%s: returned %v after the stop", desc, took)
		}
		if len(got) > len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want[:len(got)])) {
			t.Fatalf("%s: %d rows, not the file's first rows", desc, len(got))
		}
		switch {
		case action == "read to the end" && (last != nil || len(got) != len(want)):
			t.Fatalf("%s: %d rows of %d, %v", desc, len(got), len(want), last)
		case strings.HasPrefix(action, "cancel") && last != nil && !errors.Is(last, context.Canceled):
			t.Fatalf("%s: %v, want context.Canceled", desc, last)
		case (action == "break" || action == "panic") && (last != nil || len(got) != at):
			t.Fatalf("%s: %d rows, %v", desc, len(got), last)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
			t.Fatalf("%s: left behind: %v", desc, left)
		}
		t.Logf("%s: %d rows, %v", desc, len(got), last)
	}
	t.Logf("faults applied: %v", proxy.Counts())
}
