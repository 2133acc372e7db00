package parquet

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// land writes file into l as the SDK's download does: the tail first at
// its offset (when tail), then the whole file in order, in chunks of
// random sizes with pauses; failAt >= 0 ends the download there with
// errCut instead.
func land(l *landing, file []byte, tail bool, failAt int, rng *rand.Rand) {
	size := int64(len(file))
	if k := l.TailFirst(size); tail && k > 0 {
		for off := size - k; off < size; {
			n := min(int64(1+rng.IntN(8<<10)), size-off)
			_, _ = l.WriteAt(file[off:off+n], off)
			off += n
		}
	}
	for off := 0; off < len(file); {
		if failAt >= 0 && off >= failAt {
			l.finish(errCut)
			return
		}
		n := min(1+rng.IntN(4<<10), len(file)-off)
		if failAt >= 0 {
			n = min(n, failAt-off)
		}
		if _, err := l.Write(file[off : off+n]); err != nil {
			l.finish(err)
			return
		}
		off += n
		if rng.IntN(8) == 0 {
			time.Sleep(50 * time.Microsecond)
		}
	}
	l.finish(nil)
}

var errCut = errors.New("cut by the test")

// TestLanding_DecodesWhileWriting decodes files of other writers (pyarrow,
// DuckDB; see testdata/delivery) and of this module's fake from a landing
// file while it is written, tail first or not: the rows are those of the
// whole file, and a download that fails ends them with its error, never a
// hang.
func TestLanding_DecodesWhileWriting(t *testing.T) {
	paths, _ := filepath.Glob("../testdata/delivery/*.parquet")
	if len(paths) < 3 {
		t.Fatalf("parquet test files: %v", paths)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, path := range paths {
		file, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var want []map[string]any
		var wantErr error
		for row, err := range Decode[map[string]any](bytes.NewReader(file), int64(len(file))) {
			if err != nil {
				wantErr = err
				break
			}
			want = append(want, row)
		}
		if wantErr != nil || len(want) == 0 {
			t.Fatalf("%s: %d rows, %v", path, len(want), wantErr)
		}
		for _, tail := range []bool{true, false} {
			for _, failAt := range []int{-1, len(file) / 2} {
				t.Setenv("TMPDIR", t.TempDir())
				l, err := newLanding(int64(len(file)))
				if err != nil {
					t.Fatal(err)
				}
				l.tailMin = 0 // small files: the tail first all the same
				done := make(chan struct{})
				go func() { defer close(done); land(l, file, tail, failAt, rng) }()
				var got []map[string]any
				var gotErr error
				for row, err := range decode[map[string]any](l, int64(len(file)), true) {
					if err != nil {
						gotErr = err
						break
					}
					got = append(got, row)
				}
				<-done
				l.close()
				switch {
				case failAt < 0 && (gotErr != nil || !reflect.DeepEqual(got, want)):
					t.Fatalf("%s, tail first %v: %d rows of %d, %v", filepath.Base(path), tail, len(got), len(want), gotErr)
				case failAt >= 0 && tail && gotErr == nil && reflect.DeepEqual(got, want):
					// The tail and the first half hold every byte decoding
					// reads (a small file); Rows still reports the
					// download's failure after the rows.
				case failAt >= 0 && (!errors.Is(gotErr, errCut) || (len(got) > 0 && !reflect.DeepEqual(got, want[:len(got)]))):
					t.Fatalf("%s, tail first %v, cut at %d: %d rows, %v; want the first rows, then errCut", filepath.Base(path), tail, failAt, len(got), gotErr)
				}
				if left, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "*")); len(left) != 0 {
					t.Fatalf("left behind: %v", left)
				}
			}
		}
	}
}
