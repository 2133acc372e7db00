package parquet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"math/rand/v2"
	"net"
	"os"
	"reflect"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"go.uber.org/goleak"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	"github.com/lendgraph/lendgraph-go/parquet"
)

// The helpers of the root package's tests (helpers_test.go there) that
// this module's tests use: test files cannot be shared across modules.

// allFormats are every delivery format, parquet included: the root
// package's tests run the other three, and this module's the cases that
// compare parquet with them.
var allFormats = []lendgraph.Format{lendgraph.FormatNDJSON, lendgraph.FormatJSON, lendgraph.FormatCSV, lendgraph.FormatParquet}

// jobRows is job.Rows, or parquet.Rows for a parquet job.
func jobRows[T any](ctx context.Context, job *lendgraph.DeliveryJob[T], f lendgraph.Format) iter.Seq2[T, error] {
	if f == lendgraph.FormatParquet {
		return parquet.Rows(ctx, job)
	}
	return job.Rows(ctx)
}

// decodeAll decodes a file of format f: parquet.Decode for parquet,
// lendgraph.DecodeRows for the others.
func decodeAll[T any](b []byte, f lendgraph.Format) ([]T, error) {
	seq := lendgraph.DecodeRows[T](bytes.NewReader(b), f)
	if f == lendgraph.FormatParquet {
		seq = parquet.Decode[T](bytes.NewReader(b), int64(len(b)))
	}
	var out []T
	for r, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
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

// readTestFile reads a file of the repository's testdata/delivery.
func readTestFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/delivery/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// partSize is the part size of the parallel downloads of tests that want
// many parts from small files.
const partSize = 32 << 10

// setPartSize sets the bytes one ranged request of c's parallel downloads
// asks for, as the root package's SetDownloadPartSize does for its own
// tests (that hook is in its export_test.go, which only they compile).
func setPartSize(t testing.TB, c *lendgraph.Client, n int64) {
	t.Helper()
	f := reflect.ValueOf(c).Elem().FieldByName("part")
	if !f.IsValid() || f.Kind() != reflect.Int64 {
		t.Fatal("lendgraph.Client has no int64 field part: update setPartSize with the root package's SetDownloadPartSize")
	}
	*(*int64)(unsafe.Pointer(f.UnsafeAddr())) = n
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

// httpIdle ignores the goroutines of idle keep-alive connections and of
// loopback test servers, for checks made while a test's server still runs.
var httpIdle = []goleak.Option{
	goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
	goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	goleak.IgnoreAnyFunction("net/http.(*conn).serve"),
	goleak.IgnoreAnyFunction("net/http.(*connReader).backgroundRead"),
}

func agentID(a lendgraph.Agent) string { return a.ID }

// envInt reads an integer from the environment, def when unset.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
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

// dialer dials loopback addresses, sending some of them elsewhere: through
// a proxy.
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

// divert sends connections for host (host:port) to addr.
func (d *dialer) divert(host, addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.route == nil {
		d.route = map[string]string{}
	}
	d.route[host] = addr
}

// envInts reads a comma-separated list of integers.
func envInts(b *testing.B, name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			b.Fatalf("%s=%q: %v", name, v, err)
		}
		out = append(out, n)
	}
	return out
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// member is the JSON text of f's member called name ("" when f has none).
func member(f lendgraph.Fields, name string) string {
	v, _ := f.Get(name)
	return string(v)
}

// fieldsOf builds a Fields from members given as JSON text.
func fieldsOf(t testing.TB, members map[string]string) lendgraph.Fields {
	t.Helper()
	var f lendgraph.Fields
	for name, v := range members {
		if err := f.Set(name, json.RawMessage(v)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}
