package formats

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// JSONArray reads one JSON array element by element (never the whole
// file): each element is one row, of at most maxRow bytes (0: the default,
// DefaultMaxLine). A UTF-8 BOM before the array is dropped.
//
// The producer only finds where elements end (brackets and braces counted
// outside strings) and checks what lies between them: the stream is read
// straight into batch buffers and rows are slices of them. The workers'
// row decoder checks each element and reports a bad one with its row
// number.
func JSONArray(r io.Reader, maxRow int) Producer {
	if maxRow <= 0 {
		maxRow = DefaultMaxLine
	}
	return func(e *emitter) error {
		s := &arraySplitter{r: r, e: e, maxRow: maxRow}
		err := s.run()
		if b := s.b; b != nil {
			// The rows before an error are yielded before it.
			s.b = nil
			if err == nil || errors.Is(err, errStopped) || len(b.ends) == 0 {
				e.pool.Put(b)
			} else if !e.send(b) {
				return errStopped
			}
		}
		return err
	}
}

type arraySplitter struct {
	r      io.Reader
	e      *emitter
	maxRow int
	b      *Batch // rows found so far; b.buf holds the stream from off
	off    int64
	rerr   error // the read error that ended the stream (io.EOF at its end)
}

// newBatch starts a batch buffer of at least n bytes holding carry.
func (s *arraySplitter) newBatch(carry []byte, n int) {
	b := s.e.pool.Get().(*Batch)
	b.ends, b.starts, b.first = b.ends[:0], b.starts[:0], s.e.next
	b.cols, b.recs, b.decoded = nil, b.recs[:0], nil
	if cap(b.buf) < n {
		b.buf = make([]byte, 0, n)
	}
	b.buf = append(b.buf[:0], carry...)
	s.b = b
}

// more reads into the buffer, keeping b.buf[keep:]. When the buffer is
// full, the rows found so far are sent and a new buffer holds what is
// kept: positions then move back by shift. ok is false when the stream
// has ended.
func (s *arraySplitter) more(keep int) (shift int, ok bool, err error) {
	if s.rerr != nil {
		return 0, false, nil
	}
	if len(s.b.buf) == cap(s.b.buf) {
		old := s.b
		s.newBatch(old.buf[keep:], max(batchBytes, 2*(len(old.buf)-keep)))
		s.off += int64(keep)
		shift = keep
		if len(old.ends) > 0 {
			if !s.e.send(old) {
				return 0, false, errStopped
			}
		} else {
			s.e.pool.Put(old)
		}
	}
	buf, read := s.b.buf, 0
	for len(buf) < cap(buf) && s.rerr == nil {
		var n int
		n, s.rerr = s.r.Read(buf[len(buf):cap(buf)])
		buf, read = buf[:len(buf)+n], read+n
	}
	s.b.buf = buf
	return shift, read > 0, nil
}

// fail words an error at position i of the buffer.
func (s *arraySplitter) fail(what string, i int) error {
	if s.rerr != nil && !errors.Is(s.rerr, io.EOF) {
		return &RowError{Row: s.e.next, Offset: s.off + int64(i), Err: fmt.Errorf("%s: %w", what, s.rerr)}
	}
	if s.rerr != nil && i >= len(s.b.buf) {
		what = "file truncated: " + what
	}
	return &RowError{Row: s.e.next, Offset: s.off + int64(i), Err: errors.New(what)}
}

func (s *arraySplitter) run() error {
	s.newBatch(nil, batchBytes)
	i := 0
	// next moves i to the next non-space byte, keeping buf[keep:] (keep
	// moves with it); false at the end of the stream.
	next := func(keep *int) (bool, error) {
		for {
			i = skipWS(s.b.buf, i)
			if i < len(s.b.buf) {
				return true, nil
			}
			shift, ok, err := s.more(*keep)
			i, *keep = i-shift, *keep-shift
			if err != nil || !ok {
				return false, err
			}
		}
	}
	keep := 0
	if _, _, err := s.more(0); err != nil {
		return err
	}
	if bytes.HasPrefix(s.b.buf, []byte("\xEF\xBB\xBF")) {
		i, keep = 3, 3
	}
	if ok, err := next(&keep); err != nil || !ok {
		if err != nil {
			return err
		}
		if s.rerr != nil && !errors.Is(s.rerr, io.EOF) {
			// The stream failed before its first byte (a link refused, a
			// download cut): its error, not an empty file.
			re := s.fail("reading the opening '['", i).(*RowError)
			re.Row = 0
			return re
		}
		// A delivery of no rows is still "[]": nothing (or only white
		// space) is a file that never arrived whole.
		return rowErr(0, errors.New("the file is empty: not even the '[]' of a delivery of no rows"))
	}
	if c := s.b.buf[i]; c != '[' {
		return &RowError{Offset: s.off + int64(i), Err: fmt.Errorf("the file is not one JSON array: it starts with %q", c)}
	}
	i++
	for n := 0; ; n++ {
		keep = i
		if ok, err := next(&keep); err != nil || !ok {
			return errOr(err, s.fail("reading the array", i))
		}
		switch c := s.b.buf[i]; {
		case c == ']' && n == 0:
			i++
			return s.end(i)
		case n > 0 && c == ']':
			i++
			return s.end(i)
		case n > 0 && c == ',':
			i++
			keep = i
			if ok, err := next(&keep); err != nil || !ok {
				return errOr(err, s.fail("reading the array", i))
			}
		case n > 0:
			return s.fail(fmt.Sprintf("expected ',' or ']' after a row, found %q", c), i)
		}
		// An element: scan to its end, reading more as it needs.
		start := i
		for {
			end, complete := elementEnd(s.b.buf, start)
			if end-start > s.maxRow || !complete && len(s.b.buf)-start > s.maxRow {
				return rowErr(s.e.next, fmt.Errorf("the row is longer than the limit of %d bytes", s.maxRow))
			}
			if complete {
				if end < 0 {
					return s.fail(fmt.Sprintf("expected a row, found %q", s.b.buf[start]), start)
				}
				i = end
				break
			}
			shift, ok, err := s.more(start)
			start -= shift
			if err != nil {
				return err
			}
			if !ok {
				if c := s.b.buf[start]; c != '{' && c != '[' && c != '"' {
					i = len(s.b.buf) // a number or literal ends with the stream
					break
				}
				return s.fail("reading a row", len(s.b.buf))
			}
		}
		s.b.starts, s.b.ends = append(s.b.starts, start), append(s.b.ends, i)
		s.e.next++
	}
}

// end checks that nothing but whitespace follows the array at i and sends
// the last rows.
func (s *arraySplitter) end(i int) error {
	for {
		i = skipWS(s.b.buf, i)
		if i < len(s.b.buf) {
			return s.fail("more data after the array", i)
		}
		shift, ok, err := s.more(i)
		i -= shift
		if err != nil {
			return err
		}
		if !ok {
			break
		}
	}
	if !errors.Is(s.rerr, io.EOF) {
		return s.fail("reading after the array", i)
	}
	b := s.b
	s.b = nil
	if len(b.ends) == 0 {
		s.e.pool.Put(b)
		return nil
	}
	if !s.e.send(b) {
		return errStopped
	}
	return nil
}

func errOr(err, other error) error {
	if err != nil {
		return err
	}
	return other
}

// elementEnd finds the end of the JSON value starting at b[i] (not
// whitespace): objects and arrays by counting brackets outside strings,
// strings by their closing quote, numbers and literals by the next
// delimiter. complete is false when b ends first; end is -1 for a byte
// that cannot start a value. The value itself is not checked.
func elementEnd(b []byte, i int) (end int, complete bool) {
	switch c := b[i]; c {
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				e := stringEnd(b, i)
				if e < 0 {
					return 0, false
				}
				i = e
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	case '"':
		e := stringEnd(b, i)
		return e, e >= 0
	case ',', ']', '}', ':':
		return -1, true
	case 't', 'f', 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if lit[0] == c {
				if n := min(len(lit), len(b)-i); string(b[i:i+n]) == lit[:n] {
					return i + len(lit), n == len(lit)
				}
			}
		}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		for j := i; j < len(b); j++ {
			if c := b[j]; c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' && (c < '0' || c > '9') {
				return j, true
			}
		}
		return 0, false
	}
	for j := i; j < len(b); j++ {
		switch b[j] {
		case ',', ']', '}', ' ', '\t', '\r', '\n':
			return j, true
		}
	}
	return 0, false
}

// stringEnd returns the index after the JSON string at b[i] == '"' (its
// closing quote is the first one not escaped), or -1 when b ends first.
func stringEnd(b []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		bs := 0
		for bs < j-i-1 && b[j-1-bs] == '\\' {
			bs++
		}
		if bs%2 == 0 {
			return j + 1
		}
		j++
	}
}
