package export

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"gocloud.dev/blob"

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
	return readRows[T](ctx, cfg, dir, func() ([]string, lendgraph.Format, error) { return landedFiles(dir, cfg.incomplete) }, openFile)
}

// BucketRows is Rows of an export in a bucket: it reads the dataset
// straight from the store, each data file as it streams (parquet with
// ranged reads of a few MiB at a time), nothing on local disk. The files
// are those of the manifest Commit wrote; an export not committed
// (no _SUCCESS) is an error unless AllowIncomplete is given, which reads
// the shards whose records are there.
func BucketRows[T any](ctx context.Context, b *blob.Bucket, opts ...ReadOption) iter.Seq2[T, error] {
	cfg := readConfig{files: min(runtime.GOMAXPROCS(0), 4)}
	for _, o := range opts {
		o(&cfg)
	}
	return readRows[T](ctx, cfg, "the bucket", func() ([]string, lendgraph.Format, error) { return bucketFiles(ctx, b, cfg.incomplete) },
		func(ctx context.Context, name string, parquet bool) (io.Reader, io.ReaderAt, int64, func() error, error) {
			if parquet {
				attrs, err := b.Attributes(ctx, name)
				if err != nil {
					return nil, nil, 0, nil, err
				}
				return nil, newObjectReaderAt(ctx, b, name), attrs.Size, func() error { return nil }, nil
			}
			r, err := b.NewReader(ctx, name, nil)
			if err != nil {
				return nil, nil, 0, nil, err
			}
			return r, nil, r.Size(), r.Close, nil
		})
}

// bucketFiles lists the data files of the export in a bucket and its
// format.
func bucketFiles(ctx context.Context, b *blob.Bucket, incomplete bool) ([]string, lendgraph.Format, error) {
	plan, err := ReadBucketPlan(ctx, b)
	if err != nil {
		return nil, "", err
	}
	ok, err := b.Exists(ctx, SuccessFile)
	if err != nil {
		return nil, "", fmt.Errorf("export: %w", err)
	}
	if ok {
		data, err := readObject(ctx, b, ManifestFile)
		if err != nil {
			return nil, "", fmt.Errorf("export: reading %s: %w", ManifestFile, err)
		}
		var m Manifest
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, "", fmt.Errorf("export: %s: %w", ManifestFile, err)
		}
		var files []string
		for _, s := range m.Shards {
			files = append(files, s.File)
		}
		return files, plan.Request.Format, nil
	}
	bs := &bucketStore{b: b, ctx: ctx, plan: plan}
	records, err := bs.list(recordsDir, ".json")
	if err != nil {
		return nil, "", err
	}
	if !incomplete {
		return nil, "", fmt.Errorf("export: the export in the bucket is not committed: %d of %d shards landed and no %s; run the shards left, then commit (export.Commit), or read what landed with AllowIncomplete",
			len(records), len(plan.Shards), SuccessFile)
	}
	var files []string
	for i, sh := range plan.Shards {
		if records[i] {
			files = append(files, sh.File)
		}
	}
	return files, plan.Request.Format, nil
}

// opener opens a data file of a dataset: a reader for a streamed format,
// a ReaderAt and its size for parquet.
type opener func(ctx context.Context, name string, parquet bool) (r io.Reader, ra io.ReaderAt, size int64, close func() error, err error)

// openFile opens a landed file on local disk.
func openFile(_ context.Context, name string, _ bool) (io.Reader, io.ReaderAt, int64, func() error, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, 0, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, 0, nil, err
	}
	return f, f, fi.Size(), f.Close, nil
}

// readRows is Rows of the files list names, opened with open.
func readRows[T any](ctx context.Context, cfg readConfig, where string, list func() ([]string, lendgraph.Format, error), open opener) iter.Seq2[T, error] {
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
					err := decodeFile[T](ctx, open, name, format, func(row T) bool {
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
			yield(zero, fmt.Errorf("export: reading %s: %w", where, context.Cause(ctx)))
		}
	}
}

// decodeFile decodes one landed file into rows of T, handing each to fn
// until it returns false.
func decodeFile[T any](ctx context.Context, open opener, name string, format lendgraph.Format, fn func(T) bool) error {
	pq := format == lendgraph.FormatParquet
	r, ra, size, closeFile, err := open(ctx, name, pq)
	if err != nil {
		return err
	}
	defer closeFile()
	var rows iter.Seq2[T, error]
	if pq {
		rows = parquet.Decode[T](ra, size)
	} else {
		rows = lendgraph.DecodeRows[T](bufio.NewReaderSize(r, 256<<10), format)
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
