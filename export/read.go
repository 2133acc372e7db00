package export

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"runtime"
	"sync"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/parquet"
)

// ReadOption tunes Rows.
type ReadOption func(*readConfig)

type readConfig struct {
	files      int
	incomplete bool
}

// ReadFiles sets how many files Rows decodes at once (default: GOMAXPROCS,
// at most 4; each file's decoding is itself parallel).
func ReadFiles(n int) ReadOption { return func(c *readConfig) { c.files = n } }

// AllowIncomplete lets Rows read an export that has no _SUCCESS yet: the
// shards landed so far.
func AllowIncomplete() ReadOption { return func(c *readConfig) { c.incomplete = true } }

// readBatch is the number of rows a reader hands over at once.
const readBatch = 256

// Rows yields the rows of the export in st as T, decoding every landed
// file (several at once, each in file order; the order across files is not
// defined), whatever the format, straight from the storage (a bucket's
// files as they stream, parquet with ranged reads of a few MiB at a time;
// nothing on local disk): the rows Run landed, typed like
// lendgraph.DeliveryJob.Rows. The partition values are the rows' own
// fields (the files are landed as delivered; NewPlan delivers the
// partition fields even when the request narrows Fields). The files are
// those of the manifest Commit wrote; an export not committed (no
// _SUCCESS) is an error unless AllowIncomplete is given, which reads the
// shards whose records are there. Each file is checked against its record
// as it is read: a file whose size or row count is not the record's
// (cut short, written over) is an error naming it, after the rows read. A storage with no export is an error
// matching ErrNoPlan and fs.ErrNotExist.
//
// The sequence follows the SDK's iterator contract: breaking out of the
// loop (or a panic in it) stops the readers before Rows returns and leaves
// no goroutine or open file; ranging it again reads the files again;
// cancelling ctx ends it with an error that matches ctx's error.
func Rows[T any](ctx context.Context, st *Storage, opts ...ReadOption) iter.Seq2[T, error] {
	cfg := readConfig{files: min(runtime.GOMAXPROCS(0), 4)}
	for _, o := range opts {
		o(&cfg)
	}
	if err := checkStorage(st); err != nil {
		return func(yield func(T, error) bool) {
			var zero T
			yield(zero, err)
		}
	}
	return readRows[T](ctx, cfg, st.String(), func() ([]landedFile, lendgraph.Format, error) { return landedFiles(ctx, st, cfg.incomplete) },
		func(ctx context.Context, name string, parquet bool) (io.Reader, io.ReaderAt, int64, func() error, error) {
			if parquet {
				ra, size, closeFile, err := st.b.openAt(ctx, name)
				return nil, ra, size, closeFile, err
			}
			r, size, err := st.b.open(ctx, name)
			if err != nil {
				return nil, nil, 0, nil, err
			}
			return r, nil, size, r.Close, nil
		})
}

// landedFile is a data file of an export and what its record says of it.
type landedFile struct {
	name        string
	bytes, rows int64
}

// landedFiles lists the data files of the export in st and its format:
// those of its manifest once committed, else (incomplete) of the shards
// with a record.
func landedFiles(ctx context.Context, st *Storage, incomplete bool) ([]landedFile, lendgraph.Format, error) {
	m, err := ReadManifest(ctx, st)
	if err != nil {
		return nil, "", err
	}
	var files []landedFile
	for _, s := range m.Shards {
		if s.State == StateLanded {
			files = append(files, landedFile{name: s.File, bytes: s.Bytes, rows: s.Rows})
		}
	}
	if m.Verification == nil && !incomplete {
		return nil, "", fmt.Errorf("export: the export in %s is not committed: %d of %d shards landed and no %s; run the shards left, then commit (Commit), or read what landed with AllowIncomplete",
			st, len(files), len(m.Shards), SuccessFile)
	}
	return files, m.Plan.Request.Format, nil
}

// opener opens a data file of a dataset: a reader for a streamed format,
// a ReaderAt and its size for parquet.
type opener func(ctx context.Context, name string, parquet bool) (r io.Reader, ra io.ReaderAt, size int64, close func() error, err error)

// readRows is Rows of the files list names, opened with open.
func readRows[T any](ctx context.Context, cfg readConfig, where string, list func() ([]landedFile, lendgraph.Format, error), open opener) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		files, format, err := list()
		if err != nil {
			yield(zero, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		type batch struct {
			rows []T
			err  error
		}
		out := make(chan batch, max(cfg.files, 1))
		work := make(chan landedFile)
		var wg sync.WaitGroup
		for range min(max(cfg.files, 1), max(len(files), 1)) {
			wg.Go(func() {
				for f := range work {
					rows := make([]T, 0, readBatch)
					send := func(b batch) bool {
						select {
						case out <- b:
							return true
						case <-ctx.Done():
							return false
						}
					}
					err := decodeFile[T](ctx, open, f, format, func(row T) bool {
						rows = append(rows, row)
						if len(rows) < readBatch {
							return true
						}
						ok := send(batch{rows: rows})
						rows = make([]T, 0, readBatch)
						return ok
					})
					if len(rows) > 0 && err == nil && !send(batch{rows: rows}) {
						return
					}
					if err != nil {
						send(batch{err: fmt.Errorf("export: reading %s: %w", f.name, err)})
						return
					}
				}
			})
		}
		wg.Go(func() {
			defer close(work)
			for _, f := range files {
				select {
				case work <- f:
				case <-ctx.Done():
					return
				}
			}
		})
		go func() {
			wg.Wait()
			close(out)
		}()
		// Whatever ends the loop, stop the readers and wait for them.
		defer func() {
			cancel()
			for range out {
			}
		}()
		for b := range out {
			if b.err != nil {
				if ctx.Err() != nil {
					break
				}
				yield(zero, b.err)
				return
			}
			for _, row := range b.rows {
				if !yield(row, nil) {
					return
				}
			}
		}
		if err := ctx.Err(); err != nil {
			yield(zero, fmt.Errorf("export: reading %s: %w", where, context.Cause(ctx)))
		}
	}
}

// decodeFile decodes one landed file into rows of T, handing each to fn
// until it returns false. A file whose size or row count is not its
// record's was changed after it landed (cut short, written over): csv has
// no end a decoder could miss, so the record is what tells.
func decodeFile[T any](ctx context.Context, open opener, f landedFile, format lendgraph.Format, fn func(T) bool) error {
	pq := format == lendgraph.FormatParquet
	r, ra, size, closeFile, err := open(ctx, f.name, pq)
	if err != nil {
		return err
	}
	defer closeFile()
	if f.bytes > 0 && size >= 0 && size != f.bytes {
		return fmt.Errorf("%w: the file is %d bytes, its record says %d: run the export again to download it again from its job (no new charge)", errDamaged, size, f.bytes)
	}
	var rows iter.Seq2[T, error]
	if pq {
		rows = parquet.Decode[T](ra, size)
	} else {
		rows = lendgraph.DecodeRows[T](bufio.NewReaderSize(r, 256<<10), format)
	}
	var n int64
	for row, err := range rows {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		n++
		if !fn(row) {
			return nil
		}
	}
	if f.rows > 0 && n != f.rows {
		return fmt.Errorf("%w: the file holds %d rows, its record says %d: run the export again to download it again from its job (no new charge)", errDamaged, n, f.rows)
	}
	return nil
}

// errDamaged is a landed file that is not what its record says.
var errDamaged = errors.New("the file changed after it landed")
