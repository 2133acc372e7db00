package lendgraph_test

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func TestParallel_ByteExact(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000))
	one, _ := parallelClient(srv, 1)
	c, m := parallelClient(srv, 4)
	ctx := context.Background()
	for _, f := range allFormats {
		job, st := largeDelivery(t, srv, c, f)
		var want bytes.Buffer
		if _, err := lendgraph.DeliveryJobAs[lendgraph.Agent](one.Agents.DeliveryJob(job.ID)).Download(ctx, &want); err != nil {
			t.Fatal(err)
		}
		m.ranges = nil
		var got bytes.Buffer
		n, err := job.Download(ctx, &got)
		if err != nil || n != st.Bytes || !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%s: parallel download: %d bytes of %d, %v", f, n, st.Bytes, err)
		}
		maxFly, ranges := m.stats()
		// Download reads in order: parts of half the file part size.
		if err := askedParts(ranges, st.Bytes, partSize/2); err != nil || maxFly < 2 || maxFly > 4 {
			t.Fatalf("%s: %v; at most %d requests at once (want 2-4)", f, err, maxFly)
		}
		// Rows decodes the same rows from the parallel stream (parquet: from
		// the file the parts were written into).
		if a, b := collect(t, jobRows(ctx, one.Agents.DeliveryJob(job.ID), f)), collect(t, jobRows(ctx, job, f)); len(a) != 3000 || !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: rows differ (%d over one connection, %d in parallel)", f, len(a), len(b))
		}
	}
}

func TestParallel_RefreshesExpiredLinkOnce(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000), lendgraphtest.WithLinkTTL(time.Minute))
	c, _ := parallelClient(srv, 4)
	ctx := context.Background()
	job, _ := largeDelivery(t, srv, c, lendgraph.FormatCSV)
	var want bytes.Buffer
	if _, err := job.Download(ctx, &want); err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	// The link expires once the first bytes are in: every part asked for
	// afterwards meets a refused link, the four connections at once.
	expiring := &advanceOnWrite{srv: srv}
	if _, err := job.Download(ctx, expiring); err != nil || !bytes.Equal(expiring.buf.Bytes(), want.Bytes()) {
		t.Fatalf("after expiry: %v", err)
	}
	// One status fetch when the download starts, one for the fresh link:
	// not one per part or per connection.
	if n := srv.CountRequests("GET", "/v1/agents/bulk-delivery/*"); n != 2 {
		t.Fatalf("%d status fetches, want 2 (one refresh for every range)", n)
	}
}

func TestParallel_StopsCleanly(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000))
	c, _ := parallelClient(srv, 4)
	opts := append([]goleak.Option{goleak.IgnoreCurrent()}, httpIdle...)
	for _, f := range allFormats {
		job, _ := largeDelivery(t, srv, c, f)
		stopsCleanly(t, job, f, opts)
		// A writer that fails stops the download with its error.
		_, err := job.Download(context.Background(), failingWriter{})
		var de *lendgraph.DownloadError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), "disk full") {
			t.Fatalf("%s: failing writer: %v", f, err)
		}
		if err := goleak.Find(opts...); err != nil {
			t.Fatalf("%s: failed writer left goroutines: %v", f, err)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write(p []byte) (int, error) {
	return 0, errors.New("disk full")
}
