package formats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
)

// DefaultMaxLine is the longest ndjson line (one row) read by default.
const DefaultMaxLine = 64 << 20

// NDJSON reads gzipped newline-delimited JSON (concatenated gzip members
// included; a stream without the gzip magic is read as plain ndjson). Lines
// may be of any length up to maxLine bytes; CRLF line ends, blank lines
// and a missing final newline are tolerated. Lines are not validated here:
// the row decoder reports a bad one with its row number.
func NDJSON(r io.Reader, maxLine int) Producer {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return func(e *emitter) error {
		br := bufio.NewReaderSize(r, 64<<10)
		src := io.Reader(br)
		magic, err := br.Peek(2)
		if len(magic) == 0 && err == io.EOF {
			// A delivery of no rows is still a gzip file (a header and an
			// empty member): 0 bytes is a file that never arrived whole.
			return rowErr(0, errors.New("the file is empty (0 bytes): not even a gzip header"))
		}
		if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
			zr, err := gzip.NewReader(br)
			if err != nil {
				return rowErr(0, fmt.Errorf("reading the gzip header: %w", err))
			}
			defer zr.Close()
			src = zr
		}
		return splitLines(src, maxLine, e)
	}
}

// splitLines emits each non-blank line of src as one row. The stream is
// read straight into batch buffers and rows are slices of them (no copy
// but the unfinished line at the end of a buffer), so the producer does
// little besides decompressing.
func splitLines(src io.Reader, maxLine int, e *emitter) error {
	var carry []byte // an unfinished line from the previous buffer
	var offset int64 // decompressed bytes read before this buffer
	line := int64(1)
	tooLong := func() error {
		return &RowError{Row: e.next, Line: line, Offset: offset + 1, Err: fmt.Errorf("the line is longer than the limit of %d bytes", maxLine)}
	}
	for {
		b := e.pool.Get().(*Batch)
		need := len(carry) + max(batchBytes, len(carry))
		if cap(b.buf) < need {
			b.buf = make([]byte, 0, need)
		}
		buf := append(b.buf[:0], carry...)
		n, rerr := 0, error(nil)
		for len(buf) < need && rerr == nil {
			var k int
			k, rerr = src.Read(buf[len(buf):need])
			buf, n = buf[:len(buf)+k], n+k
		}
		b.buf, b.first = buf, e.next
		b.starts, b.ends = b.starts[:0], b.ends[:0]
		b.cols, b.recs, b.decoded = nil, b.recs[:0], nil
		add := func(start, end int) {
			row := buf[start:end]
			row = bytes.TrimSuffix(row, []byte{'\r'})
			if len(bytes.TrimSpace(row)) > 0 {
				b.starts, b.ends = append(b.starts, start), append(b.ends, start+len(row))
				e.next++
			}
		}
		pos := 0
		for {
			i := bytes.IndexByte(buf[pos:], '\n')
			if i < 0 {
				break
			}
			if i > maxLine {
				e.pool.Put(b)
				return tooLong()
			}
			add(pos, pos+i)
			line++
			pos += i + 1
		}
		carry = append(carry[:0], buf[pos:]...)
		if len(carry) > maxLine {
			e.pool.Put(b)
			return tooLong()
		}
		if rerr == io.EOF && len(carry) > 0 {
			add(pos, len(buf)) // a last line without '\n' is a whole row
		}
		if len(b.ends) > 0 {
			if !e.send(b) {
				return errStopped
			}
		} else {
			e.pool.Put(b)
		}
		if cap(carry) > 4<<20 && len(carry) < 64<<10 {
			carry = append([]byte(nil), carry...)
		}
		switch {
		case rerr == io.EOF:
			return nil
		case rerr != nil:
			what := "reading"
			if errors.Is(rerr, gzip.ErrChecksum) {
				what = "gzip checksum mismatch"
			} else if errors.Is(rerr, io.ErrUnexpectedEOF) {
				what = "file truncated"
			}
			return &RowError{Row: e.next, Line: line, Offset: offset + int64(n), Err: fmt.Errorf("%s: %w", what, rerr)}
		}
		offset += int64(n)
	}
}
