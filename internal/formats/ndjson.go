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
		if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
			zr, err := gzip.NewReader(br)
			if err != nil {
				return fmt.Errorf("ndjson.gz: reading the gzip header: %w", err)
			}
			defer zr.Close()
			src = zr
		}
		return splitLines(src, maxLine, e)
	}
}

// splitLines emits each non-blank line of src as one row.
func splitLines(src io.Reader, maxLine int, e *emitter) error {
	buf := make([]byte, 256<<10)
	var carry []byte // a line started in an earlier chunk
	var offset int64 // decompressed bytes before buf
	line := int64(1)
	emit := func(l []byte) bool {
		l = bytes.TrimSuffix(l, []byte{'\r'})
		if len(bytes.TrimSpace(l)) == 0 {
			return true
		}
		return e.add(l)
	}
	for {
		n, rerr := src.Read(buf)
		chunk := buf[:n]
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				if len(carry)+len(chunk) > maxLine {
					return fmt.Errorf("ndjson: line %d is longer than the limit of %d bytes", line, maxLine)
				}
				carry = append(carry, chunk...)
				break
			}
			var l []byte
			if len(carry) > 0 {
				if len(carry)+i > maxLine {
					return fmt.Errorf("ndjson: line %d is longer than the limit of %d bytes", line, maxLine)
				}
				carry = append(carry, chunk[:i]...)
				l = carry
			} else {
				if i > maxLine {
					return fmt.Errorf("ndjson: line %d is longer than the limit of %d bytes", line, maxLine)
				}
				l = chunk[:i]
			}
			if !emit(l) {
				return errStopped
			}
			if cap(carry) > 4<<20 {
				carry = nil
			}
			carry = carry[:0]
			line++
			chunk = chunk[i+1:]
		}
		offset += int64(n)
		switch {
		case rerr == io.EOF:
			// End of stream: a last line without '\n' is a whole row.
			if len(carry) > 0 && !emit(carry) {
				return errStopped
			}
			return nil
		case rerr != nil:
			what := "reading"
			if errors.Is(rerr, gzip.ErrChecksum) {
				what = "gzip checksum mismatch"
			} else if errors.Is(rerr, io.ErrUnexpectedEOF) {
				what = "file truncated"
			}
			return fmt.Errorf("ndjson.gz: %s at line %d (byte %d of the decompressed stream): %w", what, line, offset, rerr)
		}
	}
}
