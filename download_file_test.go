package lendgraph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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

// plantLink makes name a symbolic link to a victim file outside the
// download's directory and returns the victim's path and bytes.
func plantLink(t *testing.T, name string) (victim string, was []byte) {
	t.Helper()
	victim = filepath.Join(t.TempDir(), "victim")
	was = []byte("the user's own file, which no download may touch\n")
	if err := os.WriteFile(victim, was, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, name); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	return victim, was
}

func wantVictim(t *testing.T, what, victim string, was []byte) {
	t.Helper()
	if got, err := os.ReadFile(victim); err != nil || !bytes.Equal(got, was) {
		t.Errorf("%s: the victim holds %d bytes %q (%v), want its own %d", what, len(got), trim(got), err, len(was))
	}
}

func trim(b []byte) []byte { return b[:min(len(b), 40)] }

// TestDeliveryJob_DownloadFilePlantedLinks plants a symbolic link at every
// name a download writes (the part file, fresh and resumed; its record;
// the record's old temporary name) and finds the file it points to
// unchanged.
func TestDeliveryJob_DownloadFilePlantedLinks(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000))
	ctx := context.Background()
	c, _ := parallelClient(srv, 4)
	job, st := largeDelivery(t, srv, c, lendgraph.FormatCSV)
	var want bytes.Buffer
	if _, err := job.Download(ctx, &want); err != nil {
		t.Fatal(err)
	}
	resumable := func(path string) {
		b, _ := json.Marshal(map[string]any{"version": 1, "job": job.ID, "size": st.Bytes, "etag": `"x"`, "done": [][2]int64{{0, 10}}})
		if err := os.WriteFile(path+".part.meta", b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		suffix  string
		prepare func(path string)
		refused bool // the link is refused (else it is replaced, never followed)
	}{
		{name: "fresh part", suffix: ".part", refused: true},
		{name: "resumed part", suffix: ".part", prepare: resumable, refused: true},
		{name: "record", suffix: ".part.meta"},
		{name: "record's temporary file", suffix: ".part.meta.tmp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agents.csv")
			if tc.prepare != nil {
				tc.prepare(path)
			}
			victim, was := plantLink(t, path+tc.suffix)
			n, err := job.DownloadFile(ctx, path)
			wantVictim(t, tc.name, victim, was)
			if tc.refused {
				if !errors.Is(err, lendgraph.ErrUnsafeFile) || !strings.Contains(err.Error(), "symbolic link") {
					t.Fatalf("DownloadFile through a planted link: %d, %v; want it refused", n, err)
				}
				return
			}
			if err != nil || n != st.Bytes {
				t.Fatalf("DownloadFile: %d, %v", n, err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, want.Bytes()) {
				t.Fatal("the file differs from the delivery")
			}
		})
	}
}

// TestDeliveryJob_DownloadFileModes: the part file is the user's alone
// while it grows, and the output gets the mode of any new file.
func TestDeliveryJob_DownloadFileModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix modes")
	}
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000))
	c, _ := parallelClient(srv, 1)
	job, _ := largeDelivery(t, srv, c, lendgraph.FormatCSV)
	dir := t.TempDir()
	path := filepath.Join(dir, "agents.csv")
	var partMode atomic.Uint32
	if _, err := job.DownloadFile(context.Background(), path, lendgraph.WithProgress(func(*lendgraph.DownloadProgress) {
		if fi, err := os.Stat(path + ".part"); err == nil {
			partMode.Store(uint32(fi.Mode().Perm()))
		}
	})); err != nil {
		t.Fatal(err)
	}
	if m := partMode.Load(); m != 0o600 {
		t.Errorf("the part file's mode %o while downloading, want 600", m)
	}
	probe := filepath.Join(dir, "probe")
	_ = os.WriteFile(probe, nil, 0o666)
	pfi, _ := os.Stat(probe)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != pfi.Mode().Perm() {
		t.Errorf("the output's mode %v (%v), want %v like any new file", fi.Mode().Perm(), err, pfi.Mode().Perm())
	}
}

// TestDeliveryJob_DownloadFileSpace: a declared size beyond the cap, or
// beyond the free space, fails before anything is fetched or written, with
// a *DownloadSpaceError carrying the size and the bound; a file of unknown
// size stops at the cap.
func TestDeliveryJob_DownloadFileSpace(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000))
	ctx := context.Background()
	c := srv.Client()
	job, st := deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 500})
	refused := func(what string, err error, size, maxBytes int64, dir string) {
		t.Helper()
		var se *lendgraph.DownloadSpaceError
		if !errors.As(err, &se) || se.Size != size || se.MaxBytes != maxBytes || (maxBytes == 0) != (se.Free > 0 && se.Free < size) {
			t.Fatalf("%s: %v (%+v), want a *DownloadSpaceError of %d bytes, cap %d", what, err, se, size, maxBytes)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("%s: %d files written", what, len(ents))
		}
	}

	// A cap below the declared size.
	dir := t.TempDir()
	before := storageRequests(srv)
	_, err := job.DownloadFile(ctx, filepath.Join(dir, "agents.csv"), lendgraph.WithMaxDownloadBytes(st.Bytes-1))
	refused("cap", err, st.Bytes, st.Bytes-1, dir)
	if n := storageRequests(srv) - before; n != 0 {
		t.Fatalf("cap: %d requests reached the storage host", n)
	}
	if n, err := job.DownloadFile(ctx, filepath.Join(dir, "agents.csv"), lendgraph.WithMaxDownloadBytes(st.Bytes)); err != nil || n != st.Bytes {
		t.Fatalf("a cap of the file's size: %d, %v", n, err)
	}

	// A status declaring 10 TB: no sparse file, nothing fetched.
	declared := *st
	declared.Bytes = 10_000_000_000_000
	answerStatus(t, srv, &declared)
	dir = t.TempDir()
	before = storageRequests(srv)
	big := c.Agents.DeliveryJob(job.ID)
	_, err = big.DownloadFile(ctx, filepath.Join(dir, "agents.csv"))
	refused("10 TB", err, 10_000_000_000_000, 0, dir)
	if n := storageRequests(srv) - before; n != 0 {
		t.Fatalf("10 TB: %d requests reached the storage host", n)
	}
}

// TestDeliveryJob_DownloadFileIntoADirectory: a path that is a directory
// is refused before anything is sent (the file would come down whole, then
// fail to be renamed into place, leaving its part file).
func TestDeliveryJob_DownloadFileIntoADirectory(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(100))
	job, err := srv.Client().Agents.Deliver(context.Background(), &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	srv.ResetRequests()
	_, err = job.DownloadFile(context.Background(), dir)
	var ia *lendgraph.InvalidArgumentError
	if !errors.As(err, &ia) || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests before refusing a directory", n)
	}
	if entries, _ := os.ReadDir(filepath.Dir(dir)); len(entries) != 1 {
		t.Errorf("files beside the directory: %v", entries)
	}
}

// TestDeliveryJob_DownloadCap: WithMaxDownloadBytes caps Download and Rows
// too (a newcomer found them ignoring it): a declared size above the cap
// is refused before the storage host is asked; a size at or below it
// downloads whole.
func TestDeliveryJob_DownloadCap(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000))
	ctx := context.Background()
	job, st := deliver(t, srv.Client(), &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 500})
	srv.ResetRequests()
	n, err := job.Download(ctx, io.Discard, lendgraph.WithMaxDownloadBytes(1000))
	var se *lendgraph.DownloadSpaceError
	if !errors.As(err, &se) || se.MaxBytes != 1000 || se.Size != st.Bytes || n != 0 || !strings.Contains(err.Error(), "over the cap of 1000 bytes") {
		t.Fatalf("Download over the cap: %d, %v", n, err)
	}
	rows := 0
	var rerr error
	for _, err := range job.Rows(ctx, lendgraph.WithMaxDownloadBytes(1000)) {
		if err != nil {
			rerr = err
			break
		}
		rows++
	}
	if !errors.As(rerr, &se) || rows != 0 {
		t.Fatalf("Rows over the cap: %d rows, %v", rows, rerr)
	}
	if k := storageRequests(srv); k != 0 {
		t.Errorf("%d requests to the storage host for a file over the cap", k)
	}
	if n, err := job.Download(ctx, io.Discard, lendgraph.WithMaxDownloadBytes(st.Bytes)); err != nil || n != st.Bytes {
		t.Fatalf("Download at the cap: %d, %v", n, err)
	}
}

// TestDeliveryJob_DownloadCapUnknownSize: a delivery whose status record
// declares no size is cut at WithMaxDownloadBytes, by Download and by Rows
// alike: a *DownloadSpaceError inside a *DownloadError, no byte past the
// cap handed on.
func TestDeliveryJob_DownloadCapUnknownSize(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000))
	ctx := context.Background()
	c := srv.Client()
	job, st := deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 500})
	undeclared := *st
	undeclared.Bytes = 0
	answerStatus(t, srv, &undeclared)
	job = c.Agents.DeliveryJob(job.ID)
	capped := func(what string, err error) {
		t.Helper()
		var se *lendgraph.DownloadSpaceError
		var de *lendgraph.DownloadError
		if !errors.As(err, &se) || se.MaxBytes != 1000 || se.Size != -1 || !errors.As(err, &de) {
			t.Fatalf("%s: %v (%T), want a *DownloadSpaceError of the cap inside a *DownloadError", what, err, err)
		}
	}
	var buf bytes.Buffer
	n, err := job.Download(ctx, &buf, lendgraph.WithMaxDownloadBytes(1000))
	capped("Download", err)
	if n != 1000 || buf.Len() != 1000 {
		t.Fatalf("Download: %d bytes reported, %d written; want the cap's 1000", n, buf.Len())
	}
	var rerr error
	for _, err := range job.Rows(ctx, lendgraph.WithMaxDownloadBytes(1000)) {
		if err != nil {
			rerr = err
			break
		}
	}
	capped("Rows", rerr)
	if n, err := job.Download(ctx, io.Discard, lendgraph.WithMaxDownloadBytes(st.Bytes)); err != nil || n != st.Bytes {
		t.Fatalf("Download at the cap: %d, %v", n, err)
	}
}

// answerStatus makes the fake answer every status request of an agents
// delivery with st.
func answerStatus(t *testing.T, srv *lendgraphtest.Server, st *lendgraph.DeliveryStatus) {
	t.Helper()
	status, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	srv.InjectFault("GET", "/v1/agents/bulk-delivery/{jobId}", lendgraphtest.Fault{Status: 200, Body: string(status), Times: -1,
		Header: map[string]string{"Content-Type": "application/json"}})
}

// storageRequests counts the requests the fake's storage host received.
func storageRequests(srv *lendgraphtest.Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Listener == "storage" {
			n++
		}
	}
	return n
}
