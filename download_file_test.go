package lendgraph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func TestDeliveryJob_DownloadFile(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000))
	ctx := context.Background()
	for _, conns := range []int{1, 4} {
		c, m := parallelClient(srv, conns)
		job, st := largeDelivery(t, srv, c, lendgraph.FormatCSV)
		var want bytes.Buffer
		if _, err := job.Download(ctx, &want); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "agents.csv")

		// Interrupted a third of the way in: the part file and its record stay.
		m.bytes.Store(0)
		cctx, cancel := context.WithCancel(ctx)
		var calls, last atomic.Int64
		_, err := job.DownloadFile(cctx, path, lendgraph.WithProgress(func(p *lendgraph.DownloadProgress) {
			done, total := p.Done, p.Total
			calls.Add(1)
			last.Store(done)
			if total != st.Bytes {
				t.Errorf("progress total %d, want %d", total, st.Bytes)
			}
			if done > st.Bytes/3 {
				cancel()
			}
		}))
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("conns=%d: interrupted DownloadFile: %v", conns, err)
		}
		var de *lendgraph.DownloadError
		if !errors.As(err, &de) || de.Written < st.Bytes/3 || de.Size != st.Bytes {
			t.Fatalf("conns=%d: %#v", conns, de)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("%s exists before the download completed", path)
		}
		meta := readMeta(t, path+".part.meta")
		if meta.Job != job.ID || meta.Size != st.Bytes || meta.ETag == "" || len(meta.Done) == 0 {
			t.Fatalf("record: %+v", meta)
		}
		first := m.bytes.Load()

		// Continued: only the missing bytes come down.
		m.bytes.Store(0)
		var resumedFrom atomic.Int64
		resumedFrom.Store(-1)
		n, err := job.DownloadFile(ctx, path, lendgraph.WithProgress(func(p *lendgraph.DownloadProgress) {
			resumedFrom.CompareAndSwap(-1, p.Done)
		}))
		if err != nil || n != st.Bytes {
			t.Fatalf("conns=%d: continued DownloadFile: %d, %v", conns, n, err)
		}
		got, _ := os.ReadFile(path)
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("conns=%d: the file differs from the delivery", conns)
		}
		// Only the missing bytes come down, and what the steals at the end
		// read past their cuts (up to a read each, discarded: 40-58 KB in
		// runs under -race, where a bound of one part failed one run in
		// ten): far less than the third on disk, which a download from the
		// start would fetch again.
		second := m.bytes.Load()
		if second-(st.Bytes-resumedFrom.Load()) > st.Bytes/6 || resumedFrom.Load() < st.Bytes/3 {
			t.Fatalf("conns=%d: continued with %d bytes from storage (first run %d, file %d), progress from %d",
				conns, second, first, st.Bytes, resumedFrom.Load())
		}
		for _, left := range []string{path + ".part", path + ".part.meta", path + ".part.meta.tmp"} {
			if _, err := os.Stat(left); !os.IsNotExist(err) {
				t.Fatalf("%s left behind", left)
			}
		}
	}
}

func TestDeliveryJob_DownloadFileRefusesForeignPart(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000))
	ctx := context.Background()
	c, m := parallelClient(srv, 4)
	job, st := largeDelivery(t, srv, c, lendgraph.FormatCSV)
	other, _ := largeDelivery(t, srv, c, lendgraph.FormatNDJSON)
	dir := t.TempDir()
	path := filepath.Join(dir, "agents.csv")
	junk := bytes.Repeat([]byte("x"), int(st.Bytes))
	write := func(meta map[string]any) {
		t.Helper()
		b, _ := json.Marshal(meta)
		if err := os.WriteFile(path+".part.meta", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+".part", junk, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(what string) {
		t.Helper()
		m.bytes.Store(0)
		_, err := job.DownloadFile(ctx, path)
		if !errors.Is(err, lendgraph.ErrPartialMismatch) {
			t.Fatalf("%s: %v, want ErrPartialMismatch", what, err)
		}
		if b, _ := os.ReadFile(path + ".part"); !bytes.Equal(b, junk) {
			t.Fatalf("%s: the part file was written to", what)
		}
		if m.bytes.Load() > 0 {
			t.Fatalf("%s: %d bytes downloaded", what, m.bytes.Load())
		}
	}
	done := [][2]int64{{0, st.Bytes / 2}}
	write(map[string]any{"version": 1, "job": other.ID, "size": st.Bytes, "etag": `"x"`, "done": done})
	refused("another job")
	write(map[string]any{"version": 1, "job": job.ID, "size": st.Bytes + 1, "etag": `"x"`, "done": done})
	refused("another size")
	write(map[string]any{"version": 1, "job": job.ID, "size": st.Bytes, "etag": `"x"`, "done": done})
	refused("another ETag")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("a refused download created the file")
	}

	// A part file without a record (or with a record it cannot read) is
	// not this download's: it starts over.
	var want bytes.Buffer
	if _, err := job.Download(ctx, &want); err != nil {
		t.Fatal(err)
	}
	for _, meta := range []string{"", "{not json", `{"version":99}`} {
		_ = os.Remove(path + ".part.meta")
		if meta != "" {
			_ = os.WriteFile(path+".part.meta", []byte(meta), 0o644)
		}
		_ = os.WriteFile(path+".part", junk, 0o644)
		if n, err := job.DownloadFile(ctx, path); err != nil || n != st.Bytes {
			t.Fatalf("record %q: %d, %v", meta, n, err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("record %q: the file differs", meta)
		}
	}
	if _, err := job.DownloadFile(ctx, ""); err == nil {
		t.Fatal("an empty path was accepted")
	}
}
