package lendgraph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/internal/miniotest"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// The downloads against a real object store: MinIO on loopback, started
// from the binary $LENDGRAPH_MINIO names, else "minio" on the PATH. Build
// it with
//
//	go install github.com/minio/minio@latest
//
// The tests are skipped when there is none. The fake API keeps its
// delivery files in MinIO (lendgraphtest.WithS3Store) and hands out links
// presigned with AWS Signature Version 4, which MinIO checks: signature,
// expiry, Range, ETag.

// startMinIO runs a MinIO server on loopback for the test (see
// internal/miniotest) and returns the store the fake should use.
func startMinIO(t testing.TB) lendgraphtest.S3Store { return miniotest.Start(t) }

// storeClient is a client whose downloads use conns connections and small
// parts, with the store's traffic metered and, once divert is called, sent
// through a proxy.
type storeClient struct {
	*lendgraph.Client
	meter *meter
	dial  dialer
	tr    *http.Transport
}

func newStoreClient(t *testing.T, srv *lendgraphtest.Server, store lendgraphtest.S3Store, conns int) *storeClient {
	sc := &storeClient{}
	sc.tr = &http.Transport{DialContext: sc.dial.dial}
	t.Cleanup(sc.tr.CloseIdleConnections)
	sc.meter = &meter{next: sc.tr, host: strings.TrimPrefix(store.Endpoint, "http://")}
	sc.Client = srv.Client(lendgraph.WithDownloadConnections(conns), lendgraph.WithHTTPClient(&http.Client{Transport: sc.meter}))
	lendgraph.SetDownloadPartSize(sc.Client, partSize)
	return sc
}

func TestMinIO_Downloads(t *testing.T) {
	store := startMinIO(t)
	const ttl = 2 * time.Second
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000), lendgraphtest.WithS3Store(store), lendgraphtest.WithLinkTTL(ttl))
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 100_000})
	ctx := context.Background()
	one := newStoreClient(t, srv, store, 1)
	par := newStoreClient(t, srv, store, 4)

	jobs := map[lendgraph.Format]*lendgraph.DeliveryJob[lendgraph.Agent]{}
	files := map[lendgraph.Format][]byte{}
	for _, f := range allFormats {
		job, st := deliver(t, par.Client, &lendgraph.DeliveryRequest{Format: f})
		u, err := url.Parse(st.ResultsURL.Reveal())
		if err != nil || "http://"+u.Host != store.Endpoint || u.Query().Get("X-Amz-Signature") == "" {
			t.Fatalf("%s: resultsUrl %s is not a presigned link of the store", f, st.ResultsURL)
		}
		jobs[f] = job
	}

	t.Run("presigned link over one connection", func(t *testing.T) {
		for _, f := range allFormats {
			var buf bytes.Buffer
			n, err := lendgraph.DeliveryJobAs[lendgraph.Agent](one.Agents.DeliveryJob(jobs[f].ID)).Download(ctx, &buf)
			if err != nil || n != int64(buf.Len()) || n == 0 {
				t.Fatalf("%s: %d bytes, %v", f, n, err)
			}
			files[f] = buf.Bytes()
			if rows, err := decodeAll[lendgraph.Agent](t, buf.Bytes(), f); err != nil || len(rows) != 3000 {
				t.Fatalf("%s: %d rows, %v", f, len(rows), err)
			}
		}
	})

	t.Run("parallel ranges", func(t *testing.T) {
		for _, f := range allFormats {
			par.meter.mu.Lock()
			par.meter.ranges, par.meter.maxFly = nil, 0
			par.meter.mu.Unlock()
			var buf bytes.Buffer
			if _, err := jobs[f].Download(ctx, &buf); err != nil || !bytes.Equal(buf.Bytes(), files[f]) {
				t.Fatalf("%s: parallel download differs (%d of %d bytes): %v", f, buf.Len(), len(files[f]), err)
			}
			maxFly, ranges := par.meter.stats()
			if err := askedParts(ranges, int64(len(files[f])), partSize/2); err != nil || maxFly < 2 {
				t.Fatalf("%s: %v; %d requests at once", f, err, maxFly)
			}
			if rows := collect(t, jobRows(ctx, jobs[f], f)); len(rows) != 3000 {
				t.Fatalf("%s: Rows gave %d rows", f, len(rows))
			}
		}
	})

	t.Run("no credential reaches the store", func(t *testing.T) {
		seen := 0
		for _, r := range srv.Requests() {
			if r.Listener == "storage" {
				t.Fatalf("a request reached the fake's own storage host: %s", r.Path)
			}
		}
		check := &headerCheck{next: par.tr, host: par.meter.host, key: srv.DefaultCaller().Key, seen: &seen}
		c := srv.Client(lendgraph.WithDownloadConnections(4), lendgraph.WithHTTPClient(&http.Client{Transport: check}))
		lendgraph.SetDownloadPartSize(c, partSize)
		if _, err := c.Agents.DeliveryJob(jobs[lendgraph.FormatCSV].ID).Download(ctx, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		if err := check.failed(); err != nil || seen == 0 {
			t.Fatalf("%v (%d requests to the store)", err, seen)
		}
	})

	t.Run("expired links are re-signed once for all ranges", func(t *testing.T) {
		// 50 KB/s a connection: the csv file takes about two link
		// lifetimes over four connections, so parts keep meeting expired
		// links, which MinIO refuses.
		p, err := toxiServer(t).NewProxy(fmt.Sprintf("p%d", toxiProxies.Add(1)), par.meter.host)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = p.Delete() }()
		defer par.tr.CloseIdleConnections()
		if err := p.AddToxic("bandwidth", "downstream", map[string]any{"rate": 50}); err != nil {
			t.Fatal(err)
		}
		par.dial.divert(store.Endpoint, p.Listen)
		defer par.dial.divert(store.Endpoint, par.meter.host)
		par.tr.CloseIdleConnections()

		job := jobs[lendgraph.FormatCSV]
		refused := &statusCounter{next: par.meter}
		c := srv.Client(lendgraph.WithDownloadConnections(4), lendgraph.WithHTTPClient(&http.Client{Transport: refused}))
		lendgraph.SetDownloadPartSize(c, partSize)
		start := time.Now()
		var buf bytes.Buffer
		if _, err := c.Agents.DeliveryJob(job.ID).Download(ctx, &buf); err != nil || !bytes.Equal(buf.Bytes(), files[lendgraph.FormatCSV]) {
			t.Fatalf("download through expiring links: %v", err)
		}
		took := time.Since(start)
		fetches, forbidden := refused.counts()
		// One status fetch to start, then at most one a link lifetime (and
		// one for the lifetime under way), never one a range.
		if maxFetches := 2 + int(took/ttl); forbidden == 0 || fetches < 2 || fetches > maxFetches {
			t.Fatalf("in %v: %d status fetches (want 2 to %d) for %d refused ranges", took.Round(time.Millisecond), fetches, maxFetches, forbidden)
		}
		t.Logf("%v, %d ranges refused as expired, %d status fetches", took.Round(time.Millisecond), forbidden, fetches)
	})

	t.Run("DownloadFile resumes", func(t *testing.T) {
		job := jobs[lendgraph.FormatNDJSON]
		size := int64(len(files[lendgraph.FormatNDJSON]))
		path := filepath.Join(t.TempDir(), "agents.ndjson.gz")
		cctx, cancel := context.WithCancel(ctx)
		_, err := job.DownloadFile(cctx, path, lendgraph.WithProgress(func(p *lendgraph.DownloadProgress) {
			done, total := p.Done, p.Total
			if done > total/3 {
				cancel()
			}
		}))
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted: %v", err)
		}
		meta := readMeta(t, path+".part.meta")
		if !strings.HasPrefix(meta.ETag, `"`) || len(meta.Done) == 0 {
			t.Fatalf("record without MinIO's ETag: %+v", meta)
		}
		par.meter.bytes.Store(0)
		if n, err := job.DownloadFile(ctx, path); err != nil || n != size {
			t.Fatalf("continued: %d, %v", n, err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, files[lendgraph.FormatNDJSON]) {
			t.Fatal("the continued file differs")
		}
		if sent := par.meter.bytes.Load(); sent > size-size/3+partSize {
			t.Fatalf("continued with %d bytes of %d from the store", sent, size)
		}
		// A record with another ETag than MinIO's is refused.
		if err := os.WriteFile(path+".part", files[lendgraph.FormatNDJSON][:size/2], 0o644); err != nil {
			t.Fatal(err)
		}
		rec, _ := json.Marshal(map[string]any{"version": 1, "job": job.ID, "size": size, "etag": `"0123"`, "done": [][2]int64{{0, size / 2}}})
		if err := os.WriteFile(path+".part.meta", rec, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := job.DownloadFile(ctx, path); !errors.Is(err, lendgraph.ErrPartialMismatch) {
			t.Fatalf("another ETag: %v", err)
		}
	})
}

// headerCheck fails when a request to the store carries the API key or an
// Authorization header.
type headerCheck struct {
	next http.RoundTripper
	host string
	key  string
	mu   sync.Mutex
	err  error
	seen *int
}

func (h *headerCheck) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == h.host {
		h.mu.Lock()
		*h.seen++
		for name, vs := range r.Header {
			for _, v := range vs {
				if strings.Contains(v, h.key) || strings.EqualFold(name, "Authorization") || strings.EqualFold(name, "x-api-key") {
					h.err = fmt.Errorf("header %s sent to the store", name)
				}
			}
		}
		if strings.Contains(r.URL.RawQuery, h.key) {
			h.err = errors.New("the API key is in a store link")
		}
		h.mu.Unlock()
	}
	return h.next.RoundTrip(r)
}

func (h *headerCheck) failed() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// statusCounter counts delivery status fetches and the store's 403s.
type statusCounter struct {
	next      http.RoundTripper
	fetches   atomic.Int32
	forbidden atomic.Int32
}

func (s *statusCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, "/bulk-delivery/") {
		s.fetches.Add(1)
	}
	resp, err := s.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusForbidden {
		s.forbidden.Add(1)
	}
	return resp, err
}

func (s *statusCounter) counts() (fetches, forbidden int) {
	return int(s.fetches.Load()), int(s.forbidden.Load())
}
