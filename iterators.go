package lendgraph

import (
	"context"
	"errors"
	"io"
	"iter"
	"sync/atomic"
)

// This file holds what every iterator of the SDK shares, so that all of them
// keep the one contract written in the package documentation (doc.go):
// the context's error with its cause, the nil-context check, the refusal of
// a second concurrent range, and closing a stream before its decoder waits.

// ctxErr is the error a call stopped by ctx returns: it matches ctx.Err()
// (context.Canceled or context.DeadlineExceeded) and, when the context was
// ended with a cause (context.WithCancelCause, WithTimeoutCause), that
// cause too. nil while ctx is live.
func ctxErr(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return &cancelError{err: err, cause: cause}
	}
	return err
}

// cancelError is a context's error together with its cause.
type cancelError struct{ err, cause error }

func (e *cancelError) Error() string { return e.err.Error() + ": " + e.cause.Error() }

// Unwrap returns both, for errors.Is and errors.As.
func (e *cancelError) Unwrap() []error { return []error{e.err, e.cause} }

// errNilContext is what every call given a nil context returns (an
// iterator yields it), before any request is sent.
var errNilContext error = &InvalidArgumentError{Arg: "ctx",
	Problem: "is nil; pass context.Background() (or context.TODO()) when there is no context to hand"}

// checkCtx reports a nil context as an *InvalidArgumentError.
func checkCtx(ctx context.Context) error {
	if ctx == nil {
		return errNilContext
	}
	return nil
}

// errNilReader is what the decoders yield for a nil reader.
func errNilReader(name string) error {
	return invalidArg(name, "is nil; pass the file's reader (an *os.File, a response body, a bytes.Reader)")
}

// errRangedTwice is yielded by a second range of a single-use sequence (a
// decoder over a reader that cannot be rewound).
var errRangedTwice = errors.New("lendgraph: this sequence reads a stream that an earlier loop already read, " +
	"and the reader cannot seek back to where it started: call the decoder again on a fresh reader " +
	"(an io.ReadSeeker, such as an *os.File, is read again from the start instead)")

// errConcurrentRange is yielded by a range that starts while another range
// of the same sequence is running and the two would share one stream or
// one cursor.
var errConcurrentRange = errors.New("lendgraph: this sequence is already being ranged by another loop; " +
	"its loops share one reader or one cursor, so they cannot run at the same time: " +
	"create one sequence (or one Pager) per goroutine")

// rangeGuard refuses a second concurrent range of one sequence.
type rangeGuard struct{ busy atomic.Bool }

// enter reports whether the caller may range; it must call leave when done.
func (g *rangeGuard) enter() bool { return g.busy.CompareAndSwap(false, true) }

func (g *rangeGuard) leave() { g.busy.Store(false) }

// yieldClosing calls yield and, when the loop body stops (returns false)
// or panics, closes c before returning, so that a decoder reading c (from
// a goroutine of its own) sees its stream end and stops at once, instead of
// the loop waiting for a stalled network read.
func yieldClosing[T any](yield func(T, error) bool, c io.Closer, v T, err error) (more bool) {
	defer func() {
		if !more {
			_ = c.Close()
		}
	}()
	return yield(v, err)
}

// rewindable returns a function that puts r back where it stands now, or
// nil when r cannot seek.
func rewindable(r io.Reader) func() error {
	s, ok := r.(io.Seeker)
	if !ok {
		return nil
	}
	start, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil
	}
	return func() error {
		_, err := s.Seek(start, io.SeekStart)
		return err
	}
}

// replayable wraps a sequence reading r so that it follows the iterator
// contract: a second range reads r again from where the first one started
// when r can seek back, and yields errRangedTwice when it cannot; a range
// started while another one runs yields errConcurrentRange.
func replayable[T any](r io.Reader, seq func(io.Reader) iter.Seq2[T, error]) iter.Seq2[T, error] {
	var (
		guard  rangeGuard
		ranged atomic.Bool
		rewind func() error
	)
	return func(yield func(T, error) bool) {
		var zero T
		if !guard.enter() {
			yield(zero, errConcurrentRange)
			return
		}
		defer guard.leave()
		if !ranged.Swap(true) {
			rewind = rewindable(r)
		} else {
			if rewind == nil {
				yield(zero, errRangedTwice)
				return
			}
			if err := rewind(); err != nil {
				yield(zero, errors.Join(errRangedTwice, err))
				return
			}
		}
		for v, err := range seq(r) {
			if !yield(v, err) {
				return
			}
		}
	}
}
