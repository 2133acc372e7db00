package formats

import (
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// JSONArray reads one JSON array element by element (never the whole
// file): each element is one row.
func JSONArray(r io.Reader, opts ...jsontext.Options) Producer {
	return func(e *emitter) error {
		dec := jsontext.NewDecoder(r, opts...)
		fail := func(what string, err error) error {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				what = "file truncated"
			}
			return fmt.Errorf("json: %s at row %d (byte offset %d): %w", what, e.next, dec.InputOffset(), err)
		}
		tok, err := dec.ReadToken()
		if err != nil {
			return fail("reading the opening '['", err)
		}
		if tok.Kind() != '[' {
			return fmt.Errorf("json: the file is not one JSON array: it starts with %v", tok.Kind())
		}
		for dec.PeekKind() != ']' {
			v, err := dec.ReadValue()
			if err != nil {
				return fail("bad element", err)
			}
			if !e.add(v) {
				return errStopped
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return fail("reading the closing ']'", err)
		}
		if _, err := dec.ReadToken(); err != io.EOF {
			if err == nil {
				err = errors.New("more data after the array")
			}
			return fail("after the array", err)
		}
		return nil
	}
}
