package lendgraph_test

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/internal/toxitest"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// wantInvalid checks that err is an *InvalidArgumentError naming arg and
// that the fake received no request.
func wantInvalid(t *testing.T, srv *lendgraphtest.Server, err error, arg string) {
	t.Helper()
	var ia *lendgraph.InvalidArgumentError
	if !errors.As(err, &ia) {
		t.Fatalf("want *InvalidArgumentError for %s, got %T %v", arg, err, err)
	}
	if ia.Arg != arg {
		t.Fatalf("error names %q, want %q: %v", ia.Arg, arg, err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent despite invalid %s", n, arg)
	}
}

// wantStatus checks that err is an *APIError with the status.
func wantStatus(t *testing.T, err error, status int) *lendgraph.APIError {
	t.Helper()
	var ae *lendgraph.APIError
	if !errors.As(err, &ae) || ae.StatusCode != status {
		t.Fatalf("want API error %d, got %T %v", status, err, err)
	}
	return ae
}

// allFormats are the formats the root package reads. Parquet is read by
// package parquet, a module of its own: its cases of these tests are in
// that module's tests (parquet/sdk_test.go).
var allFormats = []lendgraph.Format{lendgraph.FormatNDJSON, lendgraph.FormatJSON, lendgraph.FormatCSV}

// jobRows is job.Rows, for a job delivered in format f (one of allFormats).
func jobRows[T any](ctx context.Context, job *lendgraph.DeliveryJob[T], _ lendgraph.Format) iter.Seq2[T, error] {
	return job.Rows(ctx)
}

func collect[T any](t testing.TB, seq iter.Seq2[T, error]) []T {
	t.Helper()
	var out []T
	for v, err := range seq {
		if err != nil {
			t.Fatalf("after %d rows: %v", len(out), err)
		}
		out = append(out, v)
	}
	return out
}

// deliver submits and waits for a delivery of agents.
func deliver(t *testing.T, c *lendgraph.Client, req *lendgraph.DeliveryRequest) (*lendgraph.DeliveryJob[lendgraph.Agent], *lendgraph.DeliveryStatus) {
	t.Helper()
	ctx := context.Background()
	job, err := c.Agents.Deliver(ctx, req)
	if err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	st, err := job.Wait(ctx, lendgraph.WithPollInterval(time.Millisecond, 5*time.Millisecond))
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return job, st
}

func newDeliveryServer(t *testing.T, opts ...lendgraphtest.Option) (*lendgraphtest.Server, *lendgraph.Client) {
	srv := lendgraphtest.NewServer(t, append([]lendgraphtest.Option{lendgraphtest.WithDefaultRows(3000)}, opts...)...)
	return srv, srv.Client()
}

// advanceOnWrite moves the fake's clock past the link's expiry at the first
// write, so the retry after the cut meets an expired link.
type advanceOnWrite struct {
	srv  *lendgraphtest.Server
	buf  bytes.Buffer
	done bool
}

func (a *advanceOnWrite) Write(p []byte) (int, error) {
	if !a.done {
		a.done = true
		a.srv.Advance(2 * time.Minute)
	}
	return a.buf.Write(p)
}

// idsWith returns the first n property ids whose lookup gives outcome o.
func idsWith(t *testing.T, srv *lendgraphtest.Server, o lendgraphtest.EnrichOutcome, n int) []string {
	t.Helper()
	var ids []string
	for i := 0; i < srv.Dataset().Len("properties") && len(ids) < n; i++ {
		if id := srv.Dataset().ID("properties", i); srv.EnrichOutcome(id) == o {
			ids = append(ids, id)
		}
	}
	if len(ids) < n {
		t.Fatalf("only %d properties with outcome %s", len(ids), o)
	}
	return ids
}

func propertyIDs(srv *lendgraphtest.Server, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = srv.Dataset().ID("properties", i)
	}
	return ids
}

func debits(srv *lendgraphtest.Server, org, reason string) (n int, total float64) {
	for _, d := range srv.Debits(org) {
		if d.Reason == reason {
			n++
			total += d.Amount
		}
	}
	return n, total
}

// firstErr ranges seq and returns the first error it yields.
func firstErr[T any](seq func(func(T, error) bool)) (err error) {
	for _, e := range seq {
		if e != nil {
			return e
		}
	}
	return nil
}

func smallServer(t *testing.T, opts ...lendgraphtest.Option) *lendgraphtest.Server {
	t.Helper()
	return lendgraphtest.NewServer(t, append([]lendgraphtest.Option{lendgraphtest.WithDefaultRows(50)}, opts...)...)
}

// noLeaks checks at the end of a test, after the test's own cleanups
// (registered later, run first: its servers are closed by then), that it
// left no goroutine besides those running when it was called.
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		goleak.VerifyNone(t, ignore)
	})
}

func ids[T any](items []T, id func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = id(it)
	}
	return out
}

func agentID(a lendgraph.Agent) string { return a.ID }

// httpIdle ignores the goroutines of idle keep-alive connections and of
// loopback test servers, for checks made while a test's server still runs
// (its client keeps idle connections to it until the server closes).
var httpIdle = []goleak.Option{
	goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
	goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	goleak.IgnoreAnyFunction("net/http.(*conn).serve"),
	goleak.IgnoreAnyFunction("net/http.(*connReader).backgroundRead"),
}

// envInt reads an integer from the environment, def when unset.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func matchingProperty(t *testing.T, srv *lendgraphtest.Server) string {
	for i := range srv.Dataset().Len("properties") {
		if id := srv.Dataset().ID("properties", i); srv.EnrichOutcome(id) == lendgraphtest.OutcomeMatch {
			return id
		}
	}
	t.Fatal("no matching property")
	return ""
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// dialer dials loopback addresses, sending some of them elsewhere: to a
// closed port (connection refused) or through a fault proxy.
type dialer struct {
	mu    sync.Mutex
	route map[string]string
	d     net.Dialer
}

func (d *dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	if to, ok := d.route[addr]; ok {
		addr = to
	}
	d.mu.Unlock()
	return d.d.DialContext(ctx, network, addr)
}

// divert sends connections for the host of rawURL to addr.
func (d *dialer) divert(rawURL, addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.route == nil {
		d.route = map[string]string{}
	}
	d.route[strings.TrimPrefix(rawURL, "http://")] = addr
}

// toxiProxies numbers the proxies: Toxiproxy names go into URL paths.
var toxiProxies atomic.Int64

// peakHeap samples the live heap while fn runs and reports the peak.
func peakHeap(b *testing.B, fn func()) {
	var cpu time.Duration
	peak := heapPeak(func() {
		cpu0 := cpuTime()
		fn()
		cpu = cpuTime() - cpu0
	})
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	// CPU time of the process per op: on a shared machine, where wall time
	// depends on the cores other processes leave, this shows the work.
	b.ReportMetric(cpu.Seconds()*1e3/float64(b.N), "cpu-ms/op")
}

// heapPeak runs fn while sampling the live heap (heap objects, after a GC
// first) every 2 ms, and returns the highest sample in bytes.
func heapPeak(fn func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	read := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > peak.Load() {
			peak.Store(v)
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(stop)
	<-done
	read()
	return peak.Load()
}

// hostileClient is a client of api with the hostile key and the default
// retry settings (retries and backoff as a user gets them).
func hostileClient(t *testing.T, api *recorder, opts ...lendgraph.Option) *lendgraph.Client {
	t.Helper()
	base := []lendgraph.Option{lendgraph.WithAPIKey(hostileKey), lendgraph.WithBaseURL(api.URL),
		lendgraph.WithHTTPClient(api.Client())}
	c, err := lendgraph.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// searchServer is a fake with small search indexes.
func searchServer(t testing.TB, opts ...lendgraphtest.Option) *lendgraphtest.Server {
	t.Helper()
	base := []lendgraphtest.Option{lendgraphtest.WithDefaultRows(2000)}
	return lendgraphtest.NewServer(t, append(base, opts...)...)
}

// meter is a client transport that counts what the storage host sends:
// requests, the most in flight at once, and body bytes.
type meter struct {
	next http.RoundTripper
	host string // the storage host (host:port)
	// latency and rate (bytes a second; 0: no limit), when set, stand for
	// a store far away: each response comes after latency, and its body
	// in reads of at most 512 bytes at rate.
	latency time.Duration
	rate    float64
	mu      sync.Mutex
	flying  int
	maxFly  int
	ranges  []string
	bytes   atomic.Int64
}

func (m *meter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != m.host {
		return m.next.RoundTrip(r)
	}
	m.mu.Lock()
	m.flying++
	m.maxFly = max(m.maxFly, m.flying)
	m.ranges = append(m.ranges, r.Header.Get("Range"))
	m.mu.Unlock()
	if m.latency > 0 {
		select {
		case <-time.After(m.latency):
		case <-r.Context().Done():
			m.done()
			return nil, r.Context().Err()
		}
	}
	resp, err := m.next.RoundTrip(r)
	if err != nil {
		m.done()
		return nil, err
	}
	resp.Body = &meteredBody{ReadCloser: resp.Body, m: m}
	return resp, nil
}

func (m *meter) done() {
	m.mu.Lock()
	m.flying--
	m.mu.Unlock()
}

func (m *meter) stats() (maxInFlight int, ranges []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.maxFly, append([]string(nil), m.ranges...)
}

// askedParts checks that the Range headers of a parallel download asked
// for every byte of a file of size bytes, each in a bounded range of at
// most part bytes, and not much more: parts shrink towards the end of a
// download read in order, a retried or resumed part may ask again, and
// at the end the connections take over halves of each other's last parts
// (tailRequests bounds those).
func askedParts(ranges []string, size, part int64) error {
	var spans [][2]int64
	for _, r := range ranges {
		var a, b int64
		if _, err := fmt.Sscanf(r, "bytes=%d-%d", &a, &b); err != nil || strings.HasSuffix(r, "-") {
			return fmt.Errorf("a request with Range %q, want a bounded range", r)
		}
		if b-a+1 > part {
			return fmt.Errorf("a request with Range %q: more than a part of %d bytes", r, part)
		}
		spans = append(spans, [2]int64{a, b + 1})
	}
	slices.SortFunc(spans, func(x, y [2]int64) int { return cmp.Compare(x[0], y[0]) })
	covered := int64(0)
	for _, sp := range spans {
		if sp[0] > covered {
			return fmt.Errorf("bytes %d-%d never asked for", covered, sp[0]-1)
		}
		covered = max(covered, sp[1])
	}
	if covered < size {
		return fmt.Errorf("bytes %d-%d never asked for", covered, size-1)
	}
	if parts := (size + part - 1) / part; int64(len(ranges)) > 2*parts+tailRequests {
		return fmt.Errorf("%d ranged requests for %d parts", len(ranges), parts)
	}
	return nil
}

// tailRequests bounds the requests of the shrinking parts at the end of a
// parallel download and of the takeovers.
const tailRequests = 64

type meteredBody struct {
	io.ReadCloser
	m    *meter
	once sync.Once
}

func (b *meteredBody) Read(p []byte) (int, error) {
	if b.m.rate > 0 {
		p = p[:min(len(p), 512)]
	}
	n, err := b.ReadCloser.Read(p)
	b.m.bytes.Add(int64(n))
	if b.m.rate > 0 {
		time.Sleep(time.Duration(float64(n) / b.m.rate * float64(time.Second)))
	}
	return n, err
}

func (b *meteredBody) Close() error {
	b.once.Do(b.m.done)
	return b.ReadCloser.Close()
}

// partSize is the parallel part size of the tests' clients: small, so a
// delivery of a few thousand rows is many parts.
const partSize = 32 << 10

type partMeta struct {
	Job  string     `json:"job"`
	Size int64      `json:"size"`
	ETag string     `json:"etag"`
	Done [][2]int64 `json:"done"`
}

func readMeta(t *testing.T, path string) partMeta {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m partMeta
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// toxi is the package's Toxiproxy server, started by the first test that
// needs one.
var toxi struct {
	once sync.Once
	srv  *toxitest.Server
	err  error
}

// toxiServer returns the package's Toxiproxy server, starting it (and
// building toxiproxy-server when the machine has none) on first use.
func toxiServer(t testing.TB) *toxitest.Server {
	t.Helper()
	toxi.once.Do(func() { toxi.srv, toxi.err = toxitest.Start() })
	if toxi.err != nil {
		t.Fatal(toxi.err)
	}
	return toxi.srv
}

// hostileKey is the API key of the hostile-server tests.
const hostileKey = "lg_live_hostile_0123456789abcdef"

func crmServer(t *testing.T) *lendgraphtest.Server {
	return lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(200))
}

func hasPrefixFold(s, p string) bool {
	return strings.HasPrefix(strings.ToLower(s), strings.ToLower(p))
}

// hostPost sends a raw search to the fake host.
func hostPost(t *testing.T, srv *lendgraphtest.Server, index, auth, contentType, body string) (int, map[string]string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.SearchHostURL()+"/indexes/"+index+"/search", strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	out := map[string]string{}
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return resp.StatusCode, out
}

// keyed reduces a sequence's elements to keys; break and panics pass
// straight through it.
func keyed[T any](seq iter.Seq2[T, error], key func(T) string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for v, err := range seq {
			k := ""
			if err == nil {
				k = key(v)
			}
			if !yield(k, err) {
				return
			}
		}
	}
}

// rangeStopping ranges seq once and stops it as action says, at row at:
// "break" or "panic" in the loop body, "cancel in the loop" (stop, then
// range on), or "cancel at a random moment" (stop after delay, wherever
// the range is); any other action ranges to the end. It returns the rows
// yielded, whether a stop happened and how long before the range
// returned, and the error that ended the range.
func rangeStopping[K any](seq iter.Seq2[K, error], action string, at int, delay time.Duration, stop func()) (got []K, stopped bool, took time.Duration, last error) {
	var mu sync.Mutex
	var at0 time.Time
	mark := func() {
		mu.Lock()
		at0 = time.Now()
		mu.Unlock()
	}
	if action == "cancel at a random moment" {
		timer := time.AfterFunc(delay, func() { mark(); stop() })
		defer timer.Stop()
	}
	func() {
		defer func() {
			if p := recover(); p != nil && p != "boom" {
				panic(p)
			}
		}()
		for k, err := range seq {
			if err != nil {
				last = err
				return
			}
			got = append(got, k)
			if len(got) == at {
				switch action {
				case "break":
					mark()
					return
				case "panic":
					mark()
					panic("boom")
				case "cancel in the loop":
					mark()
					stop()
				}
			}
		}
	}()
	mu.Lock()
	defer mu.Unlock()
	return got, !at0.IsZero(), time.Since(at0), last
}

// rangeUntil ranges seq, breaking after n elements (n < 0: to the end),
// and returns the keys and the error yielded.
func rangeUntil(seq iter.Seq2[string, error], n int) (got []string, err error) {
	for k, e := range seq {
		if e != nil {
			return got, e
		}
		got = append(got, k)
		if len(got) == n {
			break
		}
	}
	return got, nil
}

// parallelClient is a client of srv whose downloads use conns connections
// and parts of partSize, with its storage traffic metered.
func parallelClient(srv *lendgraphtest.Server, conns int) (*lendgraph.Client, *meter) {
	m := newMeter(strings.TrimPrefix(srv.StorageURL(), "http://"))
	c := srv.Client(lendgraph.WithDownloadConnections(conns), lendgraph.WithHTTPClient(&http.Client{Transport: m}))
	lendgraph.SetDownloadPartSize(c, partSize)
	return c, m
}

func largeDelivery(t *testing.T, srv *lendgraphtest.Server, c *lendgraph.Client, f lendgraph.Format) (*lendgraph.DeliveryJob[lendgraph.Agent], *lendgraph.DeliveryStatus) {
	t.Helper()
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 100_000})
	job, st := deliver(t, c, &lendgraph.DeliveryRequest{Format: f})
	if st.Bytes < 4*partSize {
		t.Fatalf("delivery of %d bytes: too small for the test", st.Bytes)
	}
	return job, st
}

// pathRecorder is an API that answers 404 to everything and records the
// path of each request as the server's mux sees it.
type pathRecorder struct {
	mu       sync.Mutex
	paths    []string // r.URL.Path: unescaped
	escaped  []string // r.URL.EscapedPath(): the wire form
	received int
}

// recordingClient is a client of a pathRecorder server (closed when the
// test ends), with the key "k" and opts.
func recordingClient(t *testing.T, opts ...lendgraph.Option) (*lendgraph.Client, *pathRecorder) {
	t.Helper()
	rec := &pathRecorder{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	c, err := lendgraph.NewClient(append([]lendgraph.Option{lendgraph.WithBaseURL(srv.URL), lendgraph.WithAPIKey("k")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c, rec
}

func (p *pathRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.paths = append(p.paths, r.URL.Path)
	p.escaped = append(p.escaped, r.URL.EscapedPath())
	p.received++
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(`{"error":"not found"}`))
}

var sink int64

func newMeter(host string) *meter {
	return &meter{next: http.DefaultTransport.(*http.Transport).Clone(), host: host}
}

// seen is one request a recorder received.
type seen struct {
	host, path string
	header     http.Header
	body       []byte
}

// recorder is a loopback server of the test's own, plain or TLS, that
// records the requests it answers.
type recorder struct {
	*httptest.Server
	port string
	mu   sync.Mutex
	seen []seen
}

func newRecorder(t *testing.T, tls bool, h http.HandlerFunc) *recorder {
	t.Helper()
	rec := &recorder{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.seen = append(rec.seen, seen{host: r.Host, path: r.URL.Path, header: r.Header.Clone(), body: body})
		rec.mu.Unlock()
		h(w, r)
	})
	if tls {
		rec.Server = httptest.NewTLSServer(handler)
	} else {
		rec.Server = httptest.NewServer(handler)
	}
	t.Cleanup(rec.Close)
	_, rec.port, _ = net.SplitHostPort(rec.Listener.Addr().String())
	return rec
}

// requests returns the requests received so far.
func (r *recorder) requests() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.seen...)
}

// total is the number of requests received so far.
func (r *recorder) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

func readTestFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/delivery/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeAll[T any](t *testing.T, b []byte, f lendgraph.Format, opts ...lendgraph.Option) ([]T, error) {
	t.Helper()
	var out []T
	var err error
	for r, e := range lendgraph.DecodeRows[T](bytes.NewReader(b), f, opts...) {
		if e != nil {
			err = e
			break
		}
		out = append(out, r)
	}
	return out, err
}

// cut returns the rows decoded before the error and the error.
func cut[T any](t *testing.T, b []byte, f lendgraph.Format) (int, error) {
	rows, err := decodeAll[T](t, b, f)
	return len(rows), err
}

func gzipBytes(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return b.Bytes()
}

// stopsCleanly breaks out of the job's rows after 10, then cancels a
// second range after 5 (which must end with context.Canceled on the 6th
// element), and checks after each that no goroutine is left (opts).
func stopsCleanly[T any](t *testing.T, job *lendgraph.DeliveryJob[T], f lendgraph.Format, opts []goleak.Option) {
	t.Helper()
	n := 0
	for _, err := range jobRows(context.Background(), job, f) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 10 {
			break
		}
	}
	if err := goleak.Find(opts...); err != nil {
		t.Fatalf("%s: break left goroutines: %v", f, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n = 0
	var last error
	for _, err := range jobRows(ctx, job, f) {
		if n++; n == 5 {
			cancel()
		}
		last = err
	}
	cancel()
	if !errors.Is(last, context.Canceled) || n != 6 {
		t.Fatalf("%s: after cancel: %v (%d rows)", f, last, n)
	}
	if err := goleak.Find(opts...); err != nil {
		t.Fatalf("%s: cancel left goroutines: %v", f, err)
	}
}

// chaosRands returns a chaos test's random sources, one for its stops and
// one for its faults, from a seed it logs: LENDGRAPH_CHAOS_SEED=N replays
// a run.
func chaosRands(t *testing.T) (stops, faults *rand.Rand) {
	t.Helper()
	seed := envInt("LENDGRAPH_CHAOS_SEED", int(time.Now().UnixNano()%1e9))
	t.Logf("seed %d (LENDGRAPH_CHAOS_SEED=%d replays this run)", seed, seed)
	return newRand(seed), newRand(seed + 1)
}

func newRand(seed int) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 17)) }

// member is the JSON text of f's member called name ("" when f has none).
func member(f lendgraph.Fields, name string) string {
	v, _ := f.Get(name)
	return string(v)
}
