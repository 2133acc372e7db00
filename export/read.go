package export

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
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

// Rows yields the rows of the export in dir as T, decoding every landed
// file (several at once, each in file order; the order across files is not
// defined), whatever the format: the rows Run landed, typed like
// lendgraph.DeliveryJob.Rows. The partition values are the rows' own
// fields (the files are landed as delivered; NewPlan delivers the
// partition fields even when the request narrows Fields). An export
// without _SUCCESS is an error unless AllowIncomplete is given; a dir that
// does not exist, or holds no manifest, an error that matches
// fs.ErrNotExist.
//
// The sequence follows the SDK's iterator contract: breaking out of the
// loop (or a panic in it) stops the readers before Rows returns and leaves
// no goroutine or open file; ranging it again reads the files again;
// cancelling ctx ends it with an error that matches ctx's error.
func Rows[T any](ctx context.Context, dir string, opts ...ReadOption) iter.Seq2[T, error] {
	cfg := readConfig{files: min(runtime.GOMAXPROCS(0), 4)}
	for _, o := range opts {
		o(&cfg)
	}
	return func(yield func(T, error) bool) {
		var zero T
		files, format, err := landedFiles(dir, cfg.incomplete)
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
		work := make(chan string)
		var wg sync.WaitGroup
		for range min(max(cfg.files, 1), max(len(files), 1)) {
			wg.Go(func() {
				for name := range work {
					rows := make([]T, 0, readBatch)
					send := func(b batch) bool {
						select {
						case out <- b:
							return true
						case <-ctx.Done():
							return false
						}
					}
					err := decodeFile[T](ctx, name, format, func(row T) bool {
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
						send(batch{err: fmt.Errorf("export: reading %s: %w", name, err)})
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
			yield(zero, fmt.Errorf("export: reading %s: %w", dir, context.Cause(ctx)))
		}
	}
}

// decodeFile decodes one landed file into rows of T, handing each to fn
// until it returns false.
func decodeFile[T any](ctx context.Context, name string, format lendgraph.Format, fn func(T) bool) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	var rows iter.Seq2[T, error]
	if format == lendgraph.FormatParquet {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		rows = parquet.Decode[T](f, fi.Size())
	} else {
		rows = lendgraph.DecodeRows[T](bufio.NewReaderSize(f, 256<<10), format)
	}
	for row, err := range rows {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !fn(row) {
			return nil
		}
	}
	return nil
}

// landedFiles lists the landed files of the export in dir and its format.
func landedFiles(dir string, incomplete bool) ([]string, lendgraph.Format, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, "", err
	}
	var files []string
	for _, s := range m.Shards {
		if s.State == StateLanded {
			files = append(files, filepath.Join(dir, filepath.FromSlash(s.File)))
		}
	}
	if !incomplete {
		if _, err := os.Stat(filepath.Join(dir, SuccessFile)); errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("export: %s is not complete: %d of %d shards landed and no %s; run the export again to finish it, or read what landed with AllowIncomplete",
				dir, len(files), len(m.Shards), SuccessFile)
		}
	}
	return files, m.Plan.Request.Format, nil
}
