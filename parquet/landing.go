package parquet

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// footerTail is how many bytes at the end of the file the download fetches
// first: a parquet footer (its metadata, then its length and "PAR1") is
// a few KB for a delivery (about 100 bytes a column chunk). A larger
// footer is read once the download reaches it in order.
const footerTail = 256 << 10

// tailFirstMin is the smallest file whose tail is fetched first: a
// smaller one comes down in about the time of the extra request.
const tailFirstMin = 1 << 20

// errLandingClosed is what a read waiting for bytes gets once the loop
// over the rows has ended.
var errLandingClosed = errors.New("lendgraph: parquet download stopped")

// landing is the temporary file a parquet delivery is downloaded into,
// read while it fills: a read of bytes not yet on disk waits for them, so
// row groups are decoded as they land instead of after the last byte.
// The download writes the file in order (Write) and, first, its tail with
// the footer on a connection of its own (TailFirst, WriteAt: the SDK's
// download recognizes the method).
type landing struct {
	f       *os.File
	size    int64
	tailMin int64 // tailFirstMin; tests lower it

	mu     sync.Mutex
	landed chan struct{} // closed and replaced whenever bytes land or the download ends
	next   int64         // the end of the bytes written in order
	tail   span          // the tail written at its offset, from its first byte on
	done   bool          // the download ended
	err    error         // why it ended, when not complete
}

type span struct{ off, end int64 }

func newLanding(size int64) (*landing, error) {
	f, err := os.CreateTemp("", "lendgraph-delivery-*.parquet")
	if err != nil {
		return nil, fmt.Errorf("lendgraph: a temporary file for the parquet delivery: %w", err)
	}
	return &landing{f: f, size: size, tailMin: tailFirstMin, landed: make(chan struct{})}, nil
}

// TailFirst asks the download for the footer's end of the file first.
func (l *landing) TailFirst(size int64) int64 {
	if size != l.size || size < l.tailMin {
		return 0
	}
	return min(footerTail, size/2)
}

// Write appends the download's next bytes.
func (l *landing) Write(b []byte) (int, error) {
	l.mu.Lock()
	at := l.next
	l.mu.Unlock()
	n, err := l.f.WriteAt(b, at)
	l.mu.Lock()
	l.next += int64(n)
	l.notifyLocked()
	l.mu.Unlock()
	return n, err
}

// WriteAt writes bytes of the tail at their offset. The download writes
// the tail in order from its first byte (resuming where a cut left it):
// bytes that do not follow it are on disk but not counted, and come again
// in order.
func (l *landing) WriteAt(b []byte, off int64) (int, error) {
	n, err := l.f.WriteAt(b, off)
	l.mu.Lock()
	if l.tail == (span{}) {
		l.tail = span{off, off}
	}
	if off == l.tail.end && n > 0 {
		l.tail.end += int64(n)
		l.notifyLocked()
	}
	l.mu.Unlock()
	return n, err
}

func (l *landing) notifyLocked() {
	close(l.landed)
	l.landed = make(chan struct{})
}

// finish records the end of the download: err nil when the file is
// complete.
func (l *landing) finish(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.done, l.err = true, err
		l.notifyLocked()
	}
}

// coveredLocked reports whether [off, end) is on disk.
func (l *landing) coveredLocked(off, end int64) bool {
	return end <= l.next || l.tail.off <= max(off, l.next) && end <= l.tail.end
}

// ReadAt reads bytes of the file, waiting until they have landed.
func (l *landing) ReadAt(b []byte, off int64) (int, error) {
	if off >= l.size {
		return 0, io.EOF
	}
	end := min(off+int64(len(b)), l.size)
	for {
		l.mu.Lock()
		ok, done, err, landed := l.coveredLocked(off, end), l.done, l.err, l.landed
		l.mu.Unlock()
		if ok || (done && err == nil) {
			break
		}
		if done {
			return 0, err
		}
		<-landed
	}
	n, err := l.f.ReadAt(b[:end-off], off)
	if err == nil && n < len(b) {
		err = io.EOF
	}
	return n, err
}

// failed is the error the download ended with, nil while it runs or when
// it completed.
func (l *landing) failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == errLandingClosed {
		return nil
	}
	return l.err
}

// stop ends every wait for bytes: the rows are no longer wanted.
func (l *landing) stop() { l.finish(errLandingClosed) }

// close removes the file, once the download and the decoding have ended.
func (l *landing) close() {
	l.stop()
	l.f.Close()
	os.Remove(l.f.Name())
}
