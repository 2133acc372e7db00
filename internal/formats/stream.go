// Package formats decodes bulk delivery files (ndjson.gz, json, csv) into
// typed rows, and runs the stream that other formats (parquet, in the
// parquet module's internal/pqrows, which keeps parquet-go out of programs
// that do not read parquet) decode on. A producer goroutine cuts the file into units
// (batches of JSON rows; chunks of csv records; parquet row groups) that
// GOMAXPROCS workers decode in parallel; rows are yielded in file order.
// Workers set plain fields directly (see RowDecoder); anything else is
// converted to the row's JSON and decoded by the caller's JSON decoder,
// which decides what a row looks like and words every error.
package formats

import (
	"errors"
	"fmt"
	"iter"
	"runtime"
	"sync"
)

// Batch is a run of consecutive rows, each one JSON object.
type Batch struct {
	buf    []byte
	ends   []int // ends[i] is the end of row i in buf
	starts []int // starts[i] is the start of row i; when nil, row i starts where row i-1 ends
	first  int64 // 1-based number of the batch's first row
	// csv records instead of JSON rows, when cols is set
	cols *csvColumns
	recs [][]string
	// rows already decoded (a []T of ndecoded rows) instead, when set
	decoded  any
	ndecoded int
}

// batch limits: a batch is handed to a worker once it holds this many rows
// or bytes (a single longer row makes a batch of its own).
const (
	batchRows  = 512
	batchBytes = 256 << 10
)

func (b *Batch) full() bool {
	return len(b.ends) >= batchRows || len(b.buf) >= batchBytes || len(b.recs) >= batchRows
}

// Len is the number of rows in the batch.
func (b *Batch) Len() int {
	switch {
	case b.cols != nil:
		return len(b.recs)
	case b.decoded != nil:
		return b.ndecoded
	}
	return len(b.ends)
}

// Row returns row i's JSON.
func (b *Batch) Row(i int) []byte {
	start := 0
	if b.starts != nil {
		start = b.starts[i]
	} else if i > 0 {
		start = b.ends[i-1]
	}
	return b.buf[start:b.ends[i]]
}

// emitter collects rows into batches and sends them downstream.
type emitter struct {
	cur  *Batch
	next int64 // number of the next row
	send func(*Batch) bool
	pool *sync.Pool
	rows *sync.Pool // of *[]T: row slices the reader has yielded
	// sendRun hands a Producer to a worker (see later).
	sendRun func(run Producer, first int64, outCap int) bool
}

// begin returns the batch buffer to append the next row to.
func (e *emitter) begin() []byte {
	if e.cur == nil {
		e.cur = e.pool.Get().(*Batch)
		e.cur.buf, e.cur.ends, e.cur.starts, e.cur.first = e.cur.buf[:0], e.cur.ends[:0], nil, e.next
		e.cur.cols, e.cur.recs, e.cur.decoded = nil, e.cur.recs[:0], nil
	}
	return e.cur.buf
}

// end closes the row appended to buf; false means stop.
func (e *emitter) end(buf []byte) bool {
	e.cur.buf = buf
	e.cur.ends = append(e.cur.ends, len(buf))
	e.next++
	if e.cur.full() {
		return e.flush()
	}
	return true
}

// record appends one csv record of columns c; false means stop.
func (e *emitter) record(c *csvColumns, rec []string) bool {
	e.begin()
	e.cur.cols = c
	e.cur.recs = append(e.cur.recs, rec)
	e.next++
	if e.cur.full() {
		return e.flush()
	}
	return true
}

// NewRows returns n zero rows for a unit's own code to decode into and
// send with EmitRows: a slice the reader has yielded before, or a new one.
// T must be the stream's row type.
func NewRows[T any](e *Emitter, n int) []T { return newRows[T](e.rows, n) }

func newRows[T any](pool *sync.Pool, n int) []T {
	if p, _ := pool.Get().(*[]T); p != nil && cap(*p) >= n {
		rows := (*p)[:n]
		clear(rows)
		return rows
	}
	return make([]T, n)
}

// EmitRows sends rows that a unit's own code decoded (see Emitter.Later)
// as one batch; false means stop. The rows must be of the stream's row
// type.
func EmitRows[T any](e *Emitter, rows []T) bool {
	if !e.flush() {
		return false
	}
	e.begin()
	e.cur.decoded, e.cur.ndecoded = rows, len(rows)
	e.next += int64(len(rows))
	return e.flush()
}

// add appends one complete row.
func (e *emitter) add(row []byte) bool { return e.end(append(e.begin(), row...)) }

func (e *emitter) flush() bool {
	if e.cur == nil || e.cur.Len() == 0 {
		return true
	}
	b := e.cur
	e.cur = nil
	return e.send(b)
}

// Producer reads a file and emits each row as a JSON object through e. It
// returns nil at the end of a well-formed file. It runs on its own goroutine.
type Producer func(e *emitter) error

// Emitter is what a Producer emits rows and units through.
type Emitter = emitter

// Later hands run to a worker (see later); false means stop.
func (e *Emitter) Later(run Producer, rows int64, outCap int) bool { return e.later(run, rows, outCap) }

// Next is the number of the next row (1-based).
func (e *Emitter) Next() int64 { return e.next }

// BatchRows is the most rows a batch holds.
const BatchRows = batchRows

// ErrStopped ends a Producer whose consumer went away (an emit returned
// false): return it as is.
var ErrStopped = errStopped

type result[T any] struct {
	rows []T
	err  error
}

// work is one unit in file order: a batch of JSON rows ready to decode, or
// a job (run) that a worker turns into batches itself, such as a csv chunk
// or a parquet row group.
type work[T any] struct {
	b     *Batch
	run   Producer // on a worker, emitting rows numbered from first
	first int64
	err   error // a producer error: ends the stream after the rows before it
	out   chan result[T]
}

// later hands run to a worker: it emits rows rows numbered from the next
// row, whose decoded batches wait in a buffer of outCap batches. False
// means stop.
func (e *emitter) later(run Producer, rows int64, outCap int) bool {
	if !e.flush() {
		return false
	}
	first := e.next
	e.next += rows
	return e.sendRun(run, first, outCap)
}

// Stream runs produce on one goroutine, decodes its batches on
// GOMAXPROCS workers (each with its own decoder from newDecode), and
// yields the rows in file order. format names the file format in errors.
// inFlight bounds the units queued ahead of the one being yielded (0: two
// per worker). Stopping the loop stops every goroutine before Stream's
// iterator returns (a producer blocked in Read is waited for: close its
// reader to unblock it).
func Stream[T any](format string, produce Producer, newDecode func() *RowDec[T], inFlight int) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		workers := max(runtime.GOMAXPROCS(0), 1)
		if inFlight <= 0 {
			inFlight = 2 * workers
		}
		stop := make(chan struct{})
		order := make(chan work[T], inFlight) // in file order
		jobs := make(chan work[T], inFlight)
		pool := &sync.Pool{New: func() any { return new(Batch) }}
		// The rows are yielded by value: a batch's slice is reused once
		// every row of it was yielded.
		rowsPool := &sync.Pool{}
		var wg sync.WaitGroup

		wg.Add(1)
		go func() { // producer
			defer wg.Done()
			defer close(order)
			defer close(jobs)
			send := func(w work[T]) bool {
				select {
				case order <- w:
				case <-stop:
					return false
				}
				if w.err != nil {
					return true
				}
				select {
				case jobs <- w:
					return true
				case <-stop:
					return false
				}
			}
			e := &emitter{next: 1, pool: pool, rows: rowsPool}
			e.send = func(b *Batch) bool {
				return send(work[T]{b: b, out: make(chan result[T], 1)})
			}
			e.sendRun = func(run Producer, first int64, outCap int) bool {
				return send(work[T]{run: run, first: first, out: make(chan result[T], max(outCap, 1))})
			}
			err := safeProduce(format, produce, e)
			if err == nil {
				e.flush()
				return
			}
			if errors.Is(err, errStopped) {
				return
			}
			if e.flush() {
				send(work[T]{err: atRow(e.next, err)})
			}
		}()
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				decode := newDecode()
				decodeBatch := func(b *Batch) result[T] {
					if b.decoded != nil {
						rows := b.decoded.([]T)
						b.decoded = nil
						pool.Put(b)
						return result[T]{rows: rows}
					}
					rows := newRows[T](rowsPool, b.Len())
					var err error
					for i := range rows {
						if b.cols != nil {
							err = decode.csv(b.cols, b.recs[i], b.first+int64(i), &rows[i])
						} else if derr := decode.JSON(b.Row(i), &rows[i]); derr != nil {
							err = rowErr(b.first+int64(i), derr)
						}
						if err != nil {
							rows = rows[:i]
							break
						}
					}
					b.buf = b.buf[:0]
					clear(b.recs)
					if cap(b.buf) <= 4*batchBytes {
						pool.Put(b)
					}
					return result[T]{rows: rows, err: err}
				}
				for w := range jobs {
					if w.b != nil {
						w.out <- decodeBatch(w.b)
						close(w.out)
						continue
					}
					put := func(r result[T]) bool {
						select {
						case w.out <- r:
							return r.err == nil
						case <-stop:
							return false
						}
					}
					we := &emitter{next: w.first, pool: pool, rows: rowsPool, send: func(b *Batch) bool { return put(decodeBatch(b)) }}
					err := safeProduce(format, w.run, we)
					if err == nil {
						we.flush()
					} else if !errors.Is(err, errStopped) && we.flush() {
						put(result[T]{err: atRow(we.next, err)})
					}
					close(w.out)
				}
			}()
		}
		defer func() {
			close(stop)
			// Drain so that no worker is left waiting for the consumer.
			for range order {
			}
			wg.Wait()
		}()
		for w := range order {
			if w.err != nil {
				var zero T
				yield(zero, finish(format, w.err))
				return
			}
			for r := range w.out {
				for _, row := range r.rows {
					if !yield(row, nil) {
						return
					}
				}
				if cap(r.rows) > 0 {
					rowsPool.Put(&r.rows)
				}
				if r.err != nil {
					var zero T
					yield(zero, finish(format, r.err))
					return
				}
			}
		}
	}
}

// errStopped ends a producer whose consumer went away.
var errStopped = errors.New("stopped")

// safeProduce turns a panic inside a file library into an error.
func safeProduce(format string, produce Producer, e *emitter) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = rowErr(e.next, fmt.Errorf("corrupt file: the decoder panicked: %v", p))
		}
	}()
	return produce(e)
}
