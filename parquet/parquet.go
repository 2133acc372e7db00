// Package parquet reads LendGraph bulk delivery files in the parquet
// format. It is a package of its own so that programs that import only
// package lendgraph do not link a parquet library; import it where you
// read parquet:
//
//	for a, err := range parquet.Rows(ctx, job) { ... }      // a delivery job's rows
//	for a, err := range parquet.Decode[lendgraph.Agent](f, size) { ... } // a file on disk
//
// Rows are the same as the other formats give (lendgraph.DecodeRows):
// scalar columns keep their types (DECIMAL scaled exactly, DATE and
// TIMESTAMP as strings, UUID formatted); the API's JSON-encoded nested
// fields decode into the row's nested fields, and native nested columns
// (groups, LIST, MAP) into nested structs, slices and maps; fields missing
// from a file narrowed by `fields` stay zero; columns the row type lacks
// land in its Extra fields (integers above 2^53 exact).
package parquet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/internal/formats"
	"github.com/lendgraph/lendgraph-go/parquet/internal/pqrows"
)

// Decode decodes a parquet delivery file of size bytes, read at random
// (an *os.File, a *bytes.Reader), into rows of T, yielded in file order.
// Row groups are decoded in parallel on GOMAXPROCS goroutines while the
// loop consumes earlier ones; memory holds a few row groups' rows, never
// the file. A corrupt or truncated file is an error naming the row and
// row group, never a panic, after every whole row before it. Breaking out
// of the loop stops the goroutines before the iterator returns.
func Decode[T any](r io.ReaderAt, size int64) iter.Seq2[T, error] {
	var bad *lendgraph.InvalidArgumentError
	switch {
	case r == nil:
		bad = &lendgraph.InvalidArgumentError{Arg: "r", Problem: "is nil; pass the file's reader (an *os.File, a *bytes.Reader)"}
	case size < 0:
		bad = &lendgraph.InvalidArgumentError{Arg: "size", Problem: fmt.Sprintf("is %d; pass the file's size in bytes (os.File.Stat().Size())", size)}
	}
	if bad != nil {
		return func(yield func(T, error) bool) {
			var zero T
			yield(zero, bad)
		}
	}
	return decode[T](r, size, false)
}

// decode is Decode of a file that may be landing (see pqrows.Decode).
func decode[T any](r io.ReaderAt, size int64, landing bool) iter.Seq2[T, error] {
	return pqrows.Decode(r, size, formats.SDKRowDecoder[T](), landing)
}

// Rows yields the rows of a parquet delivery job as T. A job still queued
// or running is waited for first. The file is downloaded (resuming after a
// cut connection and re-signing an expired link, as job.Download does) to
// a temporary file, which is removed when the loop ends, and decoded as
// Decode does while it comes down: the footer, at the end of the file, is
// fetched first on a connection of its own, and each row group is decoded
// once its bytes are on disk, so the rows of the first groups arrive
// before the last byte. A job of another format is an
// *lendgraph.InvalidArgumentError (use job.Rows for ndjson, json and csv).
// A failed download ends the sequence with its *lendgraph.DownloadError,
// after the rows of the row groups that had landed. Breaking out of the
// loop or cancelling ctx stops the download and the decoding; no goroutine
// or file is left behind. Errors end the sequence; cancelling ctx ends it
// with an error matching ctx.Err().
func Rows[T any](ctx context.Context, job *lendgraph.DeliveryJob[T]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		if job == nil {
			yield(zero, &lendgraph.InvalidArgumentError{Arg: "job", Problem: "is nil; pass the *DeliveryJob that Deliver or DeliveryJob returned"})
			return
		}
		if job.Format != "" && job.Format != lendgraph.FormatParquet {
			yield(zero, notParquet(job.ID, job.Format))
			return
		}
		st, err := job.Wait(ctx)
		if err != nil {
			yield(zero, err)
			return
		}
		if st.Format != lendgraph.FormatParquet {
			yield(zero, notParquet(job.ID, st.Format))
			return
		}
		size := st.Bytes
		if size <= 0 {
			size = -1 // not announced: decoded once the whole file is in
		}
		l, err := newLanding(size)
		if err != nil {
			yield(zero, err)
			return
		}
		dctx, cancel := context.WithCancel(ctx)
		var dlErr error
		var n int64
		downloaded := make(chan struct{})
		go func() {
			defer close(downloaded)
			n, dlErr = job.Download(dctx, l)
			l.finish(dlErr)
		}()
		defer func() {
			cancel()
			<-downloaded
			l.close()
		}()
		if size < 0 {
			if <-downloaded; dlErr != nil {
				yield(zero, dlErr)
				return
			}
			l.size = n
		}
		// The decoder's goroutines may wait for bytes still to come, and
		// Decode waits for them when the loop ends: a loop body that
		// breaks or panics ends their waits first.
		yieldRow := func(row T) (more bool) {
			defer func() {
				if !more {
					l.stop()
				}
			}()
			return yield(row, nil)
		}
		// A file of announced size is decoded as it lands.
		for row, err := range decode[T](l, l.size, size > 0) {
			switch {
			case err == nil && ctx.Err() == nil:
				if !yieldRow(row) {
					return
				}
				continue
			case ctx.Err() != nil:
				err = fmt.Errorf("lendgraph: reading delivery %s: %w", job.ID, ctxErr(ctx))
			default:
				err = cmp.Or(l.failed(), err) // bytes that never landed: the download's error says why
			}
			l.stop()
			yield(zero, err)
			return
		}
		// Every row is out; the download must still end well (the rest of
		// the file, the length and ETag checks).
		if <-downloaded; dlErr != nil {
			yield(zero, dlErr)
		}
	}
}

func notParquet(id string, f lendgraph.Format) error {
	return &lendgraph.InvalidArgumentError{Arg: "job", Problem: fmt.Sprintf("delivery job %s has format %q, not parquet; use job.Rows(ctx) for ndjson, json and csv", id, f)}
}

// ctxErr is ctx's error, joined with its cause when the context was ended
// with one (context.WithCancelCause), so errors.Is matches both, as the
// root package's iterators do.
func ctxErr(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); err != nil && cause != nil && cause != err {
		return errors.Join(err, cause)
	}
	return err
}
