package export_test

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
)

// landed runs a small export to completion and returns its directory,
// opened.
func landed(t *testing.T, format lendgraph.Format) (string, *export.Storage) {
	t.Helper()
	srv, c := fakeFor(t, 900, 0)
	p := planAgents(t, srv, c, format, "state")
	dir := t.TempDir()
	dest := openDest(t, dir)
	if _, err := export.Run(context.Background(), c.Agents, p, dest, runOpts()); err != nil {
		t.Fatal(err)
	}
	return dir, dest
}

func TestRowsTypedAndUntyped(t *testing.T) {
	_, dest := landed(t, lendgraph.FormatCSV)
	ctx := context.Background()
	n := 0
	for r, err := range export.Rows[lendgraph.Row](ctx, dest, export.ReadFiles(3)) {
		if err != nil {
			t.Fatal(err)
		}
		var id, state string
		if err := r.Decode("id", &id); err != nil || id == "" {
			t.Fatalf("row %v: id %q, %v", r, id, err)
		}
		if err := r.Decode("state", &state); err != nil || len(state) != 2 {
			t.Fatalf("row %v: state %q", r, state)
		}
		n++
	}
	if n != 900 {
		t.Errorf("%d rows, want 900", n)
	}
}

func TestRowsBreakAndCancelLeaveNothingRunning(t *testing.T) {
	_, dest := landed(t, lendgraph.FormatParquet)
	before := goleak.IgnoreCurrent()

	seq := export.Rows[lendgraph.Agent](context.Background(), dest, export.ReadFiles(4))
	n := 0
	for _, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 10 {
			break
		}
	}
	if err := goleak.Find(before); err != nil {
		t.Errorf("after break: %v", err)
	}
	// Ranging again reads everything again.
	n = 0
	for _, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 900 {
		t.Errorf("second range: %d rows, want 900", n)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n = 0
	var last error
	for _, err := range export.Rows[lendgraph.Agent](ctx, dest) {
		if err != nil {
			last = err
			break
		}
		if n++; n == 5 {
			cancel()
		}
	}
	if !errors.Is(last, context.Canceled) {
		t.Errorf("after cancel: %v, want context.Canceled", last)
	}
	if err := goleak.Find(before); err != nil {
		t.Errorf("after cancel: %v", err)
	}
}

func TestRowsReportsADamagedFile(t *testing.T) {
	dir, dest := landed(t, lendgraph.FormatNDJSON)
	m, _ := export.ReadManifest(context.Background(), dest)
	name := dir + "/" + m.Shards[0].File
	if err := truncateHalf(name); err != nil {
		t.Fatal(err)
	}
	if err := firstErr(export.Rows[lendgraph.Agent](context.Background(), dest)); err == nil {
		t.Error("a truncated file read without an error")
	}
}

// firstErr ranges seq and returns the first error it yields.
func firstErr[T any](seq iter.Seq2[T, error]) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestRowsChecksEachFileAgainstItsRecord: a csv file cut between two rows
// decodes as a shorter file (csv has no end to check), and one whose rows
// were written over keeps its size; Rows compares each file's size and
// row count with its record and fails on the file.
func TestRowsChecksEachFileAgainstItsRecord(t *testing.T) {
	for name, damage := range map[string]func(b []byte) []byte{
		"cut between rows": func(b []byte) []byte {
			return b[:bytes.LastIndexByte(b[:len(b)/2], '\n')+1]
		},
		"a row dropped, a blank line padded to the same size": func(b []byte) []byte {
			head := bytes.IndexByte(b, '\n') + 1
			row := bytes.IndexByte(b[head:], '\n') + 1
			out := append(bytes.Clone(b[:head]), b[head+row:]...)
			return append(out, bytes.Repeat([]byte("\n"), row)...)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir, dest := landed(t, lendgraph.FormatCSV)
			m, _ := export.ReadManifest(context.Background(), dest)
			var big export.ShardStatus
			for _, s := range m.Shards {
				if s.Rows > big.Rows {
					big = s
				}
			}
			file := filepath.Join(dir, big.File)
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			last := firstErr(export.Rows[lendgraph.Agent](context.Background(), dest))
			if last == nil || !strings.Contains(last.Error(), "changed after it landed") || !strings.Contains(last.Error(), big.File) {
				t.Errorf("a damaged csv file: %v", last)
			}
		})
	}
}
