package pqrows

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/snappy"
)

// decodeInSlices decodes src with snappyStream, cutting the output into
// slices of the given sizes (cycled).
func decodeInSlices(src []byte, size int64, cuts []int) ([]byte, error) {
	z, err := newSnappyStream(src, size)
	if err != nil {
		return nil, err
	}
	out := make([]byte, size)
	for i, at := 0, 0; at < len(out); i++ {
		k := min(max(cuts[i%len(cuts)], 1), len(out)-at)
		if err := z.read(out[at : at+k]); err != nil {
			return nil, err
		}
		at += k
	}
	if !z.finished() {
		return nil, errSnappy
	}
	return out, nil
}

// snappySamples are inputs with long and overlapping back-references,
// literals of every length class and incompressible stretches.
func snappySamples() [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 80<<10)
	for i := range random {
		random[i] = byte(r.IntN(256))
	}
	var rows bytes.Buffer
	for i := range 4000 {
		rows.WriteString(`{"name":"Office `)
		rows.WriteByte(byte('A' + i%26))
		rows.WriteString(`","zip":"0`)
		rows.WriteByte(byte('0' + i%10))
		rows.WriteString(`13","agents":`)
		rows.WriteByte(byte('0' + i%7))
		rows.WriteString("}")
	}
	return [][]byte{nil, []byte("a"), bytes.Repeat([]byte("ab"), 40000), random, rows.Bytes(),
		append(bytes.Repeat([]byte{0}, 70000), random[:20000]...)}
}

func TestSnappyStream_MatchesDecode(t *testing.T) {
	for i, data := range snappySamples() {
		enc := snappy.Encode(nil, data)
		for _, cuts := range [][]int{{1 << 30}, {3}, {7, 4096, 13}, {4000, 1 << 20}, {65536}, {100, 3}} {
			got, err := decodeInSlices(enc, int64(len(data)), cuts)
			if err != nil {
				t.Fatalf("sample %d, cuts %v: %v", i, cuts, err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("sample %d, cuts %v: decoded differs", i, cuts)
			}
		}
	}
}

// s2Repeats uses S2's "repeat the last offset" copies, short and with
// each extended length, which parquet-go's snappy codec decodes.
var s2Repeats = []byte{
	0xa7, 0x82, 0x04, // 65,831 bytes
	0x0c, 'a', 'b', 'c', 'd', // literal "abcd"
	0x05, 0x03, // copy 5 from 3 back
	0x01, 0x00, // repeat: 4
	0x15, 0x00, 2, // repeat, 1-byte length: 2+8
	0x19, 0x00, 0, 0, // repeat, 2-byte length: 0+260
	0x15, 0x00, 0, // repeat, 1-byte length: 0+8
	0x1d, 0x00, 0, 0, 0, // repeat, 3-byte length: 0+65,540
}

func TestSnappyStream_S2Repeat(t *testing.T) {
	src := s2Repeats
	want, err := snappy.Decode(nil, src)
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	for _, cuts := range [][]int{{1 << 30}, {1}, {3, 7}, {9}} {
		got, err := decodeInSlices(src, int64(len(want)), cuts)
		if err != nil {
			t.Fatalf("cuts %v: %v", cuts, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("cuts %v: decoded %q, want %q", cuts, got, want)
		}
	}
	if _, err := decodeInSlices([]byte{4, 0x01, 0x00, 0, 0}, 4, []int{4}); err == nil {
		t.Fatal("a repeat before any copy decoded")
	}
}

// FuzzSnappyStream holds the stream to klauspost's decoder: the same bytes,
// or both refuse (errFar only where the reference decodes).
func FuzzSnappyStream(f *testing.F) {
	for _, data := range snappySamples() {
		if len(data) < 4096 {
			f.Add(snappy.Encode(nil, data), uint16(7))
		}
	}
	f.Add([]byte{5, 0x10, 'a', 'b', 'c', 'd', 'e'}, uint16(1))
	f.Add([]byte{10, 0x04, 'a', 'b', 0x11, 2}, uint16(3))
	f.Add(s2Repeats, uint16(5))
	f.Add([]byte{0x81, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00, 'a'}, uint16(1)) // a 6-byte length
	f.Fuzz(func(t *testing.T, src []byte, cut uint16) {
		n, k := binary.Uvarint(src)
		if k <= 0 || n > 1<<20 {
			return // the reference would allocate it all
		}
		size := int(n)
		want, werr := snappy.Decode(nil, src)
		got, gerr := decodeInSlices(src, int64(size), []int{int(cut%5000) + 1, 1})
		switch {
		case werr == nil && gerr == nil:
			if !bytes.Equal(got, want) {
				t.Fatalf("decoded differs")
			}
		case werr == nil && !errors.Is(gerr, errFar):
			t.Fatalf("stream refused what snappy decodes: %v", gerr)
		case werr != nil && gerr == nil:
			t.Fatalf("stream decoded what snappy refuses (%v)", werr)
		}
	})
}
