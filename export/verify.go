package export

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"sync"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/parquet"
)

// idRow is what verification decodes of a row: its id (from a parquet
// file only the id column is read).
type idRow struct {
	ID string `json:"id"`
}

// errNoID is a row without an id: the duplicate check cannot work.
var errNoID = errors.New("a row has no id (the duplicate check needs the id column; keep \"id\" in Fields)")

// countFile decodes a landed file and counts its rows, giving every id to
// sink when set.
func countFile(ctx context.Context, name string, format lendgraph.Format, sink func(string) error) (int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if format == lendgraph.FormatParquet {
		fi, err := f.Stat()
		if err != nil {
			return 0, err
		}
		return countRows(ctx, parquet.Decode[idRow](f, fi.Size()), sink)
	}
	return countStream(ctx, f, format, sink)
}

// countStream decodes a file of a streamed format (not parquet) as it is
// read, and counts its rows, giving every id to sink when set.
func countStream(ctx context.Context, r io.Reader, format lendgraph.Format, sink func(string) error) (int64, error) {
	return countRows(ctx, lendgraph.DecodeRows[idRow](bufio.NewReaderSize(r, 256<<10), format), sink)
}

// countRows counts decoded rows, giving every id to sink when set.
func countRows(ctx context.Context, rows iter.Seq2[idRow, error], sink func(string) error) (int64, error) {
	var n int64
	for row, err := range rows {
		if err != nil {
			return n, err
		}
		n++
		if n%4096 == 0 && ctx.Err() != nil {
			return n, ctx.Err()
		}
		if sink != nil {
			if row.ID == "" {
				return n, errNoID
			}
			if err := sink(row.ID); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// verify checks the whole dataset once every shard has landed: each file
// still matches its record and decodes to its rows, no id appears twice,
// and landed rows are set against planned ones. It records the check in
// the manifest and writes _SUCCESS when it passes.
func (r *runner[T]) verify(ctx context.Context) error {
	m := r.store.snapshot()
	set := newIDSet(r.plan.Total, "")
	defer set.Close()

	var wg sync.WaitGroup
	errs := make([]error, len(m.Shards))
	work := make(chan int)
	for range min(r.opts.Concurrency, max(len(m.Shards), 1)) {
		wg.Go(func() {
			for i := range work {
				errs[i] = r.verifyShard(ctx, &m.Shards[i], set, int32(i))
			}
		})
	}
	for i := range m.Shards {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("export: verifying the dataset: %w", err)
	}
	count, found, err := set.Check()
	if err != nil {
		return err
	}
	v := newVerification(r.plan, m.Shards, count, found)
	if err := r.dir.verified(v); err != nil {
		return err
	}
	r.verification(v)
	if count > 0 {
		return &DuplicateError{Count: count, Examples: v.Duplicates}
	}
	if err := writeAtomic(filepath.Join(r.opts.Dir, SuccessFile), nil); err != nil {
		return fmt.Errorf("export: writing %s: %w", SuccessFile, err)
	}
	r.mu.Lock()
	r.res.Complete = true
	r.mu.Unlock()
	return nil
}

// newVerification sums up the check of a whole dataset: the shards' rows
// and charges, and the duplicates found.
func newVerification(p *Plan, shards []ShardStatus, count int64, found []dupFound) *Verification {
	v := &Verification{Files: len(shards), PlannedRows: p.Total, DuplicateIDs: count, VerifiedAt: time.Now().UTC()}
	for _, s := range shards {
		v.LandedRows += s.Rows
		if s.ChargedCount != nil {
			v.ChargedRows += *s.ChargedCount
		}
		if s.CreditsCharged != nil {
			v.CreditsCharged += *s.CreditsCharged
		}
		v.UncertainRows += p.lostRows(&s)
	}
	for _, d := range found {
		v.Duplicates = append(v.Duplicates, Duplicate{ID: d.id, Shards: [2]string{shards[d.shards[0]].Name, shards[d.shards[1]].Name}})
	}
	v.Complete = count == 0
	return v
}

// verification records the check in the result, with a warning when the
// landed rows are not the planned ones.
func (r *runner[T]) verification(v *Verification) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Verification = v
	if v.LandedRows != v.PlannedRows {
		more := "fewer"
		if v.LandedRows > v.PlannedRows {
			more = "more"
		}
		r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("landed %d rows, %d %s than the %d planned: the data changed between planning and delivery (or the entitlement's row filters hold some back)",
			v.LandedRows, abs(v.LandedRows-v.PlannedRows), more, v.PlannedRows))
	}
}

// verifyShard checks one landed file against its record and feeds its ids
// to the duplicate check.
func (r *runner[T]) verifyShard(ctx context.Context, s *ShardStatus, set *idSet, idx int32) error {
	name := filepath.Join(r.opts.Dir, filepath.FromSlash(s.File))
	fi, err := os.Stat(name)
	if err != nil {
		return fmt.Errorf("shard %s: %w (run the export again to download it again)", s.Name, err)
	}
	if fi.Size() != s.Bytes {
		return fmt.Errorf("shard %s: %s has %d bytes, %d when it landed (run the export again to download it again)", s.Name, s.File, fi.Size(), s.Bytes)
	}
	n, err := countFile(ctx, name, r.plan.Request.Format, func(id string) error { return set.Add(id, idx) })
	if err != nil {
		return fmt.Errorf("shard %s: %s: %w", s.Name, s.File, err)
	}
	if n != s.Rows {
		return fmt.Errorf("shard %s: %s holds %d rows, %d when it landed", s.Name, s.File, n, s.Rows)
	}
	return nil
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
