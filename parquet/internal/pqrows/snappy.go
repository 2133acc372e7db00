package pqrows

import (
	"encoding/binary"
	"errors"
)

// snappyStream decodes a snappy block (the raw format parquet uses, not
// the framed one) a slice at a time, straight into the reader's buffers:
// in Go, so the first writes to fresh memory fault where the GC can
// preempt the goroutine, and with no second copy of the page (see
// inflate.go). Back-references reach into the current slice or into the
// last histMax bytes before it; one that reaches further (the format
// allows it, encoders keep within 64 KiB) is errFar, and the page is then
// decompressed whole.
type snappyStream struct {
	src  []byte
	s    int   // next byte of src
	n    int64 // bytes decoded so far
	size int64 // bytes the block decodes to
	// An element cut by the end of the last slice.
	lit     int // literal bytes left, at src[s:]
	cp, off int // copy bytes left, and its offset (kept after the copy: S2's repeat)
	hist    []byte
}

// histMax is how far back the stream keeps output for back-references.
const histMax = 64 << 10

var (
	errSnappy = errors.New("snappy: corrupt input")
	errFar    = errors.New("snappy: back-reference beyond the kept history")
)

// newSnappyStream starts decoding src, which must decode to size bytes.
func newSnappyStream(src []byte, size int64) (*snappyStream, error) {
	n, k := binary.Uvarint(src)
	if k <= 0 || k > 5 || n != uint64(size) { // s2.Decode refuses a longer length
		return nil, errSnappy
	}
	return &snappyStream{src: src, s: k, size: size}, nil
}

// read fills dst with the next len(dst) decoded bytes.
func (z *snappyStream) read(dst []byte) error {
	if int64(len(dst)) > z.size-z.n {
		return errSnappy
	}
	d := 0
	for d < len(dst) {
		if z.lit == 0 && z.cp == 0 {
			if err := z.element(); err != nil {
				return err
			}
		}
		if z.lit > 0 {
			k := copy(dst[d:d+min(z.lit, len(dst)-d)], z.src[z.s:])
			z.s, z.lit, d, z.n = z.s+k, z.lit-k, d+k, z.n+int64(k)
			continue
		}
		// A copy of cp more bytes from off back.
		k := min(z.cp, len(dst)-d)
		if z.off > d { // it starts before dst, in hist
			back := z.off - d
			if back > len(z.hist) {
				return errFar
			}
			m := copy(dst[d:d+min(k, back)], z.hist[len(z.hist)-back:])
			d, k, z.cp, z.n = d+m, k-m, z.cp-m, z.n+int64(m)
		}
		for k > 0 { // within dst; overlapping repeats the last off bytes
			m := copy(dst[d:d+min(k, z.off)], dst[d-z.off:])
			d, k, z.cp, z.n = d+m, k-m, z.cp-m, z.n+int64(m)
		}
	}
	z.keep(dst)
	return nil
}

// finished reports whether the block was decoded exactly: every byte of
// output and of input used.
func (z *snappyStream) finished() bool {
	return z.n == z.size && z.s == len(z.src) && z.lit == 0 && z.cp == 0
}

// keep makes hist the last histMax bytes decoded.
func (z *snappyStream) keep(dst []byte) {
	if len(dst) >= histMax {
		z.hist = append(z.hist[:0], dst[len(dst)-histMax:]...)
		return
	}
	if drop := len(z.hist) + len(dst) - histMax; drop > 0 {
		z.hist = z.hist[:copy(z.hist, z.hist[drop:])]
	}
	z.hist = append(z.hist, dst...)
}

// element reads the next element's tag into lit or cp and off.
func (z *snappyStream) element() error {
	src, s := z.src, z.s
	if s >= len(src) {
		return errSnappy
	}
	var length, off int
	switch src[s] & 3 {
	case 0: // literal
		x := uint32(src[s] >> 2)
		switch {
		case x < 60:
			s++
		case x == 60:
			s += 2
			if s > len(src) {
				return errSnappy
			}
			x = uint32(src[s-1])
		case x == 61:
			s += 3
			if s > len(src) {
				return errSnappy
			}
			x = uint32(src[s-2]) | uint32(src[s-1])<<8
		case x == 62:
			s += 4
			if s > len(src) {
				return errSnappy
			}
			x = uint32(src[s-3]) | uint32(src[s-2])<<8 | uint32(src[s-1])<<16
		default:
			s += 5
			if s > len(src) {
				return errSnappy
			}
			x = binary.LittleEndian.Uint32(src[s-4:])
		}
		length = int(x) + 1
		if length <= 0 || length > len(src)-s || int64(length) > z.size-z.n {
			return errSnappy
		}
		z.s, z.lit = s, length
		return nil
	case 1:
		s += 2
		if s > len(src) {
			return errSnappy
		}
		length = int(src[s-2]) >> 2 & 7
		off = int(uint32(src[s-2])&0xe0<<3 | uint32(src[s-1]))
		if off == 0 {
			// S2's "repeat the last offset", which parquet-go's codec
			// (klauspost's snappy.Decode, that is s2.Decode) accepts in a
			// snappy page: the view reads what parquet-go would.
			off = z.off
			ext := max(length-4, 0) // bytes of extended length: 1-3 for lengths 5-7
			s += ext
			if s > len(src) {
				return errSnappy
			}
			switch ext {
			case 1:
				length = int(src[s-1]) + 4
			case 2:
				length = int(binary.LittleEndian.Uint16(src[s-2:])) + 1<<8
			case 3:
				length = int(uint32(src[s-3])|uint32(src[s-2])<<8|uint32(src[s-1])<<16) + 1<<16
			}
		}
		length += 4
	case 2:
		s += 3
		if s > len(src) {
			return errSnappy
		}
		length = 1 + int(src[s-3])>>2
		off = int(binary.LittleEndian.Uint16(src[s-2:]))
	default:
		s += 5
		if s > len(src) {
			return errSnappy
		}
		length = 1 + int(src[s-5])>>2
		off = int(binary.LittleEndian.Uint32(src[s-4:]))
	}
	if off <= 0 || int64(off) > z.n || int64(length) > z.size-z.n {
		return errSnappy
	}
	z.s, z.cp, z.off = s, length, off
	return nil
}
