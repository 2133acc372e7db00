package pqrows

import (
	"bytes"
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
	f.Fuzz(func(t *testing.T, src []byte, cut uint16) {
		size, err := snappy.DecodedLen(src)
		if err != nil || size > 1<<20 {
			return // the reference would allocate it all
		}
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
