package parquet_test

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/parquet"
)

// The iterator contract (the root package's doc.go), held by parquet.Rows
// and parquet.Decode as by every iter.Seq2 the SDK returns: parquet's
// cases of the root package's iterators_test.go.

// parquetCases are parquet.Rows of a delivery and parquet.Decode of its
// file, their rows reduced to ids, with every id in order.
func parquetCases(t *testing.T) (cases map[string]func(context.Context) iter.Seq2[string, error], want []string) {
	t.Helper()
	_, c := newDeliveryServer(t)
	job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet, Limit: 120})
	var buf bytes.Buffer
	if _, err := job.Download(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	file := buf.Bytes()
	cases = map[string]func(context.Context) iter.Seq2[string, error]{
		"Rows": func(ctx context.Context) iter.Seq2[string, error] {
			return keyed(parquet.Rows(ctx, c.Agents.DeliveryJob(job.ID)), agentID)
		},
		"Decode": func(context.Context) iter.Seq2[string, error] {
			return keyed(parquet.Decode[lendgraph.Agent](bytes.NewReader(file), int64(len(file))), agentID)
		},
	}
	want, err := rangeUntil(cases["Decode"](context.Background()), -1)
	if err != nil || len(want) != 120 {
		t.Fatalf("%d rows, %v", len(want), err)
	}
	return cases, want
}

// TestIterators_StartOver: ranging the same value again after a break or
// after a full read yields every row from the first.
func TestIterators_StartOver(t *testing.T) {
	noLeaks(t)
	cases, want := parquetCases(t)
	for name, seqOf := range cases {
		t.Run(name, func(t *testing.T) {
			seq := seqOf(context.Background())
			if got, err := rangeUntil(seq, 4); err != nil || !slices.Equal(got, want[:4]) {
				t.Fatalf("first range: %v, %v", got, err)
			}
			for _, after := range []string{"a break", "a full read"} {
				got, err := rangeUntil(seq, -1)
				if d := cmp.Diff(want, got); d != "" || err != nil {
					t.Fatalf("range after %s: %v (-want +got):\n%s", after, err, d)
				}
			}
		})
	}
}

// TestIterators_ConcurrentRanges: two ranges of one value at once are
// independent (parquet is read at offsets: no shared reader), each every
// row.
func TestIterators_ConcurrentRanges(t *testing.T) {
	noLeaks(t)
	cases, want := parquetCases(t)
	for name, seqOf := range cases {
		t.Run(name, func(t *testing.T) {
			seq := seqOf(context.Background())
			inside, done := make(chan struct{}), make(chan struct{})
			var first []string
			var firstErr error
			var wg sync.WaitGroup
			wg.Go(func() {
				for k, err := range seq {
					if err != nil {
						firstErr = err
						break
					}
					first = append(first, k)
					if len(first) == 1 {
						close(inside)
						<-done
					}
				}
			})
			<-inside
			second, err := rangeUntil(seq, -1)
			close(done)
			wg.Wait()
			if firstErr != nil || !slices.Equal(first, want) {
				t.Fatalf("first range: %d rows, %v", len(first), firstErr)
			}
			if err != nil || !slices.Equal(second, want) {
				t.Fatalf("second concurrent range: %d rows, %v", len(second), err)
			}
		})
	}
}

// TestIterators_CancelGivesTheCause: cancelling parquet.Rows with a cause
// ends it at the next element with an error matching both
// context.Canceled and the cause; no row comes after the cancel.
func TestIterators_CancelGivesTheCause(t *testing.T) {
	noLeaks(t)
	cases, _ := parquetCases(t)
	cause := errors.New("the operator pressed stop")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	n, extra := 0, 0
	var last error
	for _, err := range cases["Rows"](ctx) {
		if err != nil {
			last = err
			break
		}
		if n == 3 {
			extra++
			continue
		}
		if n++; n == 3 {
			cancel(cause)
		}
	}
	if !errors.Is(last, context.Canceled) || !errors.Is(last, cause) || extra != 0 {
		t.Fatalf("after the cancel: %v, %d rows after it; want an error matching context.Canceled and the cause", last, extra)
	}
	expired, stop := context.WithTimeoutCause(context.Background(), 0, cause)
	defer stop()
	if _, err := rangeUntil(cases["Rows"](expired), -1); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, cause) {
		t.Fatalf("expired context: %v", err)
	}
}

// TestIterators_ParquetRowsLeaveNothing: the temporary file of a
// parquet delivery is removed on break, panic and cancel.
func TestIterators_ParquetRowsLeaveNothing(t *testing.T) {
	noLeaks(t)
	_, c := newDeliveryServer(t)
	job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet, Limit: 500})
	// After the fake wrote its files: the SDK's alone land here.
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	for _, how := range []string{"break", "panic", "cancel"} {
		ctx, cancel := context.WithCancel(context.Background())
		func() {
			defer func() { _ = recover() }()
			n := 0
			for _, err := range parquet.Rows(ctx, job) {
				if err != nil {
					break
				}
				if n++; n == 7 {
					switch how {
					case "break":
						return
					case "panic":
						panic("boom")
					default:
						cancel()
					}
				}
			}
		}()
		cancel()
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Fatalf("%s: %d files left in the temporary directory", how, len(left))
		}
	}
}
