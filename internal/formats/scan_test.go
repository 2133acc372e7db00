package formats

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestShortStringAgreesWithScanString holds the two-word fast path to the
// full scan: on every string it reports an end, that end is scanString's
// and the string is plain (no escape, no byte above 0x7f).
func TestShortStringAgreesWithScanString(t *testing.T) {
	alphabet := []byte{'a', 'Z', '0', ' ', '"', '\\', 'n', 'u', 0x1f, 0x7f, 0x80, 0xc3, 0xa9}
	r := rand.New(rand.NewPCG(1, 2))
	found := 0
	for range 200000 {
		b := make([]byte, r.IntN(40))
		for k := range b {
			b[k] = alphabet[r.IntN(len(alphabet))]
		}
		i := 0
		if len(b) > 0 {
			i = r.IntN(len(b))
		}
		if len(b) == 0 {
			continue
		}
		b[i] = '"'
		end := shortString(b, i)
		if end == 0 {
			continue
		}
		found++
		want, esc, hi, ok := scanString(b, i)
		if !ok || want != end || esc || hi {
			t.Fatalf("shortString(%q, %d) = %d; scanString = %d, esc %v, hi %v, ok %v", b, i, end, want, esc, hi, ok)
		}
		if got, ok := skipString(b, i); !ok || got != end {
			t.Fatalf("skipString(%q, %d) = %d, %v; want %d", b, i, got, ok, end)
		}
	}
	if found < 1000 {
		t.Fatalf("only %d strings took the fast path: the test no longer exercises it", found)
	}
}

// TestSkipWS holds the one-comparison fast path to the plain loop.
func TestSkipWS(t *testing.T) {
	alphabet := []byte{' ', '\n', '\r', '\t', 0, 0x0b, 0x0c, '!', 'a', '{'}
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		b := make([]byte, r.IntN(8))
		for k := range b {
			b[k] = alphabet[r.IntN(len(alphabet))]
		}
		i := r.IntN(len(b) + 1)
		want := i
		for want < len(b) && (b[want] == ' ' || b[want] == '\n' || b[want] == '\r' || b[want] == '\t') {
			want++
		}
		if got := skipWS(b, i); got != want {
			t.Fatalf("skipWS(%q, %d) = %d, want %d", b, i, got, want)
		}
	}
}

// TestRowOwnsItsMemory: a decoded row shares no memory with the bytes it
// was decoded from (a reader reuses them for the next rows), whether its
// strings and kept members are copied as one window of the row (Agent) or
// apart (nested).
func TestRowOwnsItsMemory(t *testing.T) {
	t.Run("Agent", checkRowsOwnTheirMemory[benchAgent])
	t.Run("nested", checkRowsOwnTheirMemory[benchNested])
}

func checkRowsOwnTheirMemory[T any](t *testing.T) {
	d := RowDecoder[T](slowUnmarshal, false)()
	for k, r := range benchRows(8) {
		in := append([]byte(nil), r...)
		var got, want T
		if err := d.JSON(in, &got); err != nil {
			t.Fatal(err)
		}
		if err := slowUnmarshal(r, &want); err != nil {
			t.Fatal(err)
		}
		clear(in)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("row %d after its bytes were reused: %s", k, diff)
		}
	}
}
