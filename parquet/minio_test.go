package parquet_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/internal/miniotest"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	"github.com/lendgraph/lendgraph-go/parquet"
)

// Parquet's cases of the root package's downloads against a real object
// store (minio_test.go there): MinIO on loopback, started by
// internal/miniotest from $LENDGRAPH_MINIO (else minio on the PATH; the
// test is skipped when there is none). The fake keeps its delivery files
// in MinIO and hands out links presigned with AWS Signature Version 4,
// which MinIO checks: signature, expiry, Range, ETag.

// minioRows is the rows of the MinIO test's parquet delivery: three row
// groups of the fake's (20,000 rows each), a file of over 1 MiB, whose
// tail parquet.Rows fetches first.
const minioRows = 45_000

func TestMinIO_ParquetDownloads(t *testing.T) {
	store := miniotest.Start(t)
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(minioRows), lendgraphtest.WithS3Store(store))
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 100_000})
	ctx := context.Background()
	host := strings.TrimPrefix(store.Endpoint, "http://")
	one := srv.Client(lendgraph.WithDownloadConnections(1))
	par, m := storeClient(t, srv, host, 4)

	job, st := deliver(t, par, &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet})
	u, err := url.Parse(st.ResultsURL.Reveal())
	if err != nil || u.Host != host || u.Query().Get("X-Amz-Signature") == "" {
		t.Fatalf("resultsUrl %s is not a presigned link of the store", st.ResultsURL)
	}
	if st.Bytes < 1<<20 {
		t.Fatalf("a file of %d bytes: under the 1 MiB from which the tail comes first", st.Bytes)
	}

	// Over one connection: the file and its rows, which every other way
	// must give.
	var buf bytes.Buffer
	n, err := one.Agents.DeliveryJob(job.ID).Download(ctx, &buf)
	if err != nil || n != int64(buf.Len()) || n != st.Bytes {
		t.Fatalf("one connection: %d bytes of %d: %v", n, st.Bytes, err)
	}
	file := buf.Bytes()
	want, err := decodeAll[lendgraph.Agent](file, lendgraph.FormatParquet)
	if err != nil || len(want) != minioRows {
		t.Fatalf("one connection: %d rows, %v", len(want), err)
	}

	t.Run("parallel ranges", func(t *testing.T) {
		m.reset()
		var buf bytes.Buffer
		if _, err := job.Download(ctx, &buf); err != nil || !bytes.Equal(buf.Bytes(), file) {
			t.Fatalf("parallel download differs (%d of %d bytes): %v", buf.Len(), len(file), err)
		}
		maxFly, ranges := m.stats()
		if err := askedParts(ranges, int64(len(file)), partSize/2); err != nil || maxFly < 2 {
			t.Fatalf("%v; %d requests at once", err, maxFly)
		}
	})

	t.Run("rows over parallel ranges, the tail first", func(t *testing.T) {
		m.reset()
		if got := collect(t, parquet.Rows(ctx, job)); !reflect.DeepEqual(got, want) {
			t.Fatalf("%d rows, not those of the file (%d)", len(got), len(want))
		}
		_, ranges := m.stats()
		if err := tailAsked(ranges, int64(len(file))); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("rows as their bytes land", func(t *testing.T) {
		// The store's bytes from 60% of the file on are held back until
		// the first row group's rows are out: they came from the bytes
		// that had landed, with the footer MinIO sent first.
		for _, conns := range []int{1, 4} {
			g := &gate{base: http.DefaultTransport, host: host, cut: int64(len(file)) * 6 / 10, open: make(chan struct{})}
			c := srv.Client(lendgraph.WithDownloadConnections(conns), lendgraph.WithHTTPClient(&http.Client{Transport: g}))
			setPartSize(t, c, 8*partSize)
			tctx, cancel := context.WithTimeout(ctx, time.Minute)
			var got []lendgraph.Agent
			for a, err := range parquet.Rows(tctx, c.Agents.DeliveryJob(job.ID)) {
				if err != nil {
					t.Fatalf("%d connections, after %d rows: %v", conns, len(got), err)
				}
				if got = append(got, a); len(got) == 20_000 {
					g.release()
				}
			}
			cancel()
			g.release()
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%d connections: %d rows, not those of the file (%d)", conns, len(got), len(want))
			}
		}
	})
}

// storeClient is a client of srv whose downloads use conns connections
// and parts of partSize, with its traffic to the store at host metered.
func storeClient(t *testing.T, srv *lendgraphtest.Server, host string, conns int) (*lendgraph.Client, *meter) {
	m := newMeter(host)
	t.Cleanup(m.next.(*http.Transport).CloseIdleConnections)
	c := srv.Client(lendgraph.WithDownloadConnections(conns), lendgraph.WithHTTPClient(&http.Client{Transport: m}))
	setPartSize(t, c, partSize)
	return c, m
}

// tailAsked checks that a download asked the store for the file's tail
// on a request of its own: a range of more than a part, from the file's
// second half to its last byte.
func tailAsked(ranges []string, size int64) error {
	for _, r := range ranges {
		from, to, ok := strings.Cut(strings.TrimPrefix(r, "bytes="), "-")
		off, err := strconv.ParseInt(from, 10, 64)
		if ok && err == nil && to == strconv.FormatInt(size-1, 10) && off >= size/2 && size-off > partSize {
			return nil
		}
	}
	return fmt.Errorf("none of %d requests asked for the tail of the file of %d bytes", len(ranges), size)
}
