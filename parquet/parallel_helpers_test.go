package parquet_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// The parallel-download helpers of the root package's tests
// (helpers_test.go there), for parquet's cases of its parallel tests.

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

// parallelClient is a client of srv whose downloads use conns connections
// and parts of partSize, with its storage traffic metered.
func parallelClient(t testing.TB, srv *lendgraphtest.Server, conns int) (*lendgraph.Client, *meter) {
	m := newMeter(strings.TrimPrefix(srv.StorageURL(), "http://"))
	c := srv.Client(lendgraph.WithDownloadConnections(conns), lendgraph.WithHTTPClient(&http.Client{Transport: m}))
	setPartSize(t, c, partSize)
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

func newMeter(host string) *meter {
	return &meter{next: http.DefaultTransport.(*http.Transport).Clone(), host: host}
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

// reset forgets the requests counted so far.
func (m *meter) reset() {
	m.mu.Lock()
	m.ranges, m.maxFly = nil, 0
	m.mu.Unlock()
	m.bytes.Store(0)
}
