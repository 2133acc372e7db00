package pqrows

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/snappy"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"

	"github.com/lendgraph/lendgraph-go/internal/formats"
)

// withBigPage sets the page size from which the view decompresses pages,
// for the test.
func withBigPage(t testing.TB, n int64) {
	old := bigPage
	bigPage = n
	t.Cleanup(func() { bigPage = old })
}

// decodeAll decodes every row of file, stopping at the first error.
func decodeAll[T any](file []byte) ([]T, error) {
	var rows []T
	for r, err := range Decode(bytes.NewReader(file), int64(len(file)), formats.RowDecoder[T](slow, false), false) {
		if err != nil {
			return rows, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

type inflateRow struct {
	ID     int64   `parquet:"id" json:"id"`
	City   string  `parquet:"city,dict" json:"city"`
	Office string  `parquet:"office,optional" json:"office"`
	Tags   string  `parquet:"tags,optional" json:"tags"`
	Volume float64 `parquet:"volume,optional" json:"volume"`
}

type inflateOut struct {
	ID     int64   `json:"id"`
	City   string  `json:"city"`
	Office *office `json:"office"`
	Tags   []string
	Volume float64 `json:"volume"`
}

// writeInflateFile writes rows of JSON-encoded nested fields with
// parquet-go (which writes a CRC on every page).
func writeInflateFile(t testing.TB, opts ...parquet.WriterOption) []byte {
	r := rand.New(rand.NewPCG(3, 4))
	var rows []inflateRow
	for i := range 1200 {
		row := inflateRow{ID: int64(i), City: fmt.Sprint("city ", i%17), Volume: float64(i) / 8}
		if i%9 != 0 {
			row.Office = fmt.Sprintf(`{"name":"Office %d %x","zip":"%05d","agents":%d}`, i, r.Uint64(), i*7%100000, i%13)
		}
		if i%4 != 0 {
			row.Tags = fmt.Sprintf(`["t%d","u%d"]`, i%5, r.IntN(1000))
		}
		rows = append(rows, row)
	}
	return writeParquet(t, rows, opts...)
}

// inflateFiles are files written by DuckDB (testdata/delivery) and by
// parquet-go with every page layout the view rewrites.
func inflateFiles(t testing.TB) map[string][]byte {
	files := map[string][]byte{}
	for _, name := range []string{"nested.parquet", "zips.parquet", "agents.parquet"} {
		files["duckdb "+name] = readFile(t, name)
	}
	for _, c := range []struct {
		name    string
		codec   compress.Codec
		version int
	}{{"snappy", &parquet.Snappy, 1}, {"snappy", &parquet.Snappy, 2}, {"zstd", &parquet.Zstd, 2}, {"gzip", &parquet.Gzip, 1}, {"none", &parquet.Uncompressed, 1}} {
		files[fmt.Sprintf("parquet-go %s v%d", c.name, c.version)] = writeInflateFile(t, parquet.Compression(c.codec), parquet.DataPageVersion(c.version),
			parquet.PageBufferSize(4<<10), parquet.MaxRowsPerRowGroup(500))
	}
	files["parquet-go snappy one page a chunk"] = writeInflateFile(t, parquet.Compression(&parquet.Snappy))
	return files
}

// TestInflate_SameRows: every file decodes to the same rows, and the same
// errors, through the view (every snappy page inflated) as without it.
func TestInflate_SameRows(t *testing.T) {
	for name, file := range inflateFiles(t) {
		t.Run(name, func(t *testing.T) {
			withBigPage(t, math.MaxInt64)
			wantMap, werr1 := decodeAll[map[string]jsontext.Value](file)
			wantOut, werr2 := decodeAll[inflateOut](file)
			withBigPage(t, 1)
			f, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
			if err != nil {
				t.Fatal(err)
			}
			_, _, viewed := inflate(bytes.NewReader(file), int64(len(file)), false, f.Metadata())
			// gzip and zstd decode in Go: the view leaves them to parquet-go.
			if snappy := strings.Contains(name, "duckdb") || strings.Contains(name, "snappy"); viewed != snappy {
				t.Fatalf("viewed %v, want %v", viewed, snappy)
			}
			gotMap, gerr1 := decodeAll[map[string]jsontext.Value](file)
			gotOut, gerr2 := decodeAll[inflateOut](file)
			if fmt.Sprint(werr1, werr2) != fmt.Sprint(gerr1, gerr2) {
				t.Fatalf("errors: without the view %v, %v; with it %v, %v", werr1, werr2, gerr1, gerr2)
			}
			if len(wantMap) == 0 {
				t.Fatal("no rows")
			}
			if d := cmp.Diff(wantMap, gotMap); d != "" {
				t.Fatal(d)
			}
			if d := cmp.Diff(wantOut, gotOut); d != "" {
				t.Fatal(d)
			}
		})
	}
}

// TestInflate_CorruptPage: a byte changed in a compressed page is the
// CRC's error, at the column, with the rows before it kept.
func TestInflate_CorruptPage(t *testing.T) {
	withBigPage(t, 1)
	file := writeInflateFile(t, parquet.Compression(&parquet.Snappy), parquet.PageBufferSize(4<<10))
	f, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	md := f.Metadata().RowGroups[0].Columns[2].MetaData // office
	bad := bytes.Clone(file)
	bad[md.DataPageOffset+md.TotalCompressedSize/2] ^= 0x55
	rows, err := decodeAll[inflateOut](bad)
	var re *formats.RowError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "crc32 checksum mismatch") || !strings.Contains(err.Error(), "office") {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
}

// TestInflate_FarBackReference: a page whose snappy block refers back
// further than the stream keeps is decompressed whole, bytes unchanged.
func TestInflate_FarBackReference(t *testing.T) {
	lit := make([]byte, histMax+5000)
	for i := range lit {
		lit[i] = byte(i * 7)
	}
	// A literal, then a copy of 64 bytes from its start (tag copy-4).
	size := len(lit) + 64
	block := binary.AppendUvarint(nil, uint64(size))
	block = append(block, 63<<2, byte(len(lit)-1), byte((len(lit)-1)>>8), byte((len(lit)-1)>>16), 0)
	block = append(block, lit...)
	block = append(block, 63<<2|3, byte(len(lit)), byte(len(lit)>>8), byte(len(lit)>>16), 0)
	want, err := snappy.Decode(nil, block)
	if err != nil || len(want) != size {
		t.Fatalf("the block: %v", err)
	}
	c := &vchunk{file: bytes.NewReader(block), codec: &parquet.Snappy, snappy: true, cur: -1,
		pages: []vpage{{size: int64(size), stored: int64(len(block)), packed: true}}}
	got := make([]byte, size)
	for _, cut := range [][2]int{{0, 4096}, {4096, histMax + 4096}, {histMax + 4096, size}} {
		if n, err := c.data(0, got[cut[0]:cut[1]], int64(cut[0])); err != nil || n != cut[1]-cut[0] {
			t.Fatalf("read %v: %d, %v", cut, n, err)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatal("decoded differs")
	}
	if c.cur != -1 || c.z != nil || c.out != nil {
		t.Fatal("the page is kept after its last byte was read")
	}
}

// hasLZ4 reports whether the file opens and has an LZ4_RAW column.
func hasLZ4(file []byte) (lz4 bool) {
	defer func() {
		if recover() != nil { // parquet-go panics on some bad footers; Decode recovers
			lz4 = false
		}
	}()
	r := bytes.NewReader(file)
	if checkFooter(r, int64(len(file))) != nil {
		return false
	}
	pf, err := parquet.OpenFile(r, int64(len(file)), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return false
	}
	for _, rg := range pf.Metadata().RowGroups {
		for _, cc := range rg.Columns {
			if cc.MetaData.Codec == format.Lz4Raw {
				return true
			}
		}
	}
	return false
}

// FuzzInflate holds the view to parquet-go reading the file itself: as
// many rows, and an error exactly when parquet-go has one; never a panic.
// Files with an LZ4_RAW column are skipped: parquet-go reads them wrong.
// The view may also refuse a page whose CRC is wrong where parquet-go
// reads on: it checks dictionary pages, which parquet-go does not.
func FuzzInflate(f *testing.F) {
	seeds := map[string]bool{}
	add := func(file []byte) {
		seeds[string(file)] = true
		f.Add(file)
	}
	for _, name := range []string{"nested.parquet", "zips.parquet", "agents.parquet"} {
		add(readFile(f, name))
	}
	for _, v := range []int{1, 2} {
		add(writeParquet(f, []inflateRow{{ID: 1, City: "a", Office: `{"zip":"00013"}`, Tags: `["x"]`}, {ID: 2, City: "b"}, {ID: 3, City: "a", Volume: 2}},
			parquet.Compression(&parquet.Snappy), parquet.DataPageVersion(v), parquet.PageBufferSize(256)))
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		if hasLZ4(file) {
			return // parquet-go is no reference for LZ4_RAW (TestInflate_LZ4)
		}
		withBigPage(t, math.MaxInt64)
		want, werr := decodeAll[map[string]jsontext.Value](file)
		withBigPage(t, 1)
		got, gerr := decodeAll[map[string]jsontext.Value](file)
		if werr == nil && strings.Contains(fmt.Sprint(gerr), "crc32 checksum mismatch") {
			return // the view checks a dictionary page's CRC too; parquet-go does not
		}
		if (werr == nil) != (gerr == nil) || len(want) != len(got) {
			t.Fatalf("without the view: %d rows, %v; with it: %d rows, %v", len(want), werr, len(got), gerr)
		}
		// The rows themselves are compared for the seeds (and in
		// TestInflate_SameRows): parquet-go reads a byte array whose length
		// runs past its page from the rest of its pooled buffer, so on such
		// a file its values depend on what the buffer held before (found by
		// this target).
		if seeds[string(file)] && !cmp.Equal(want, got) {
			t.Fatal(cmp.Diff(want, got))
		}
	})
}

// TestInflate_LZ4 reads LZ4_RAW files through the view at any page size:
// parquet-go v0.32.0 decompresses an LZ4_RAW page that compresses less
// than 3-fold into a new buffer and then keeps its old one, so its own
// reading gives zeros or another page's bytes, silently.
func TestInflate_LZ4(t *testing.T) {
	type row struct {
		ID     int64   `parquet:"id" json:"id"`
		Volume float64 `parquet:"volume" json:"volume"`
		Note   string  `parquet:"note,optional" json:"note"`
	}
	r := rand.New(rand.NewPCG(5, 6))
	var rows []row
	for i := range 3000 {
		rows = append(rows, row{ID: int64(i) * 7919, Volume: r.Float64() * 1e6, Note: fmt.Sprintf("%x", r.Uint64())})
	}
	for _, v := range []int{1, 2} {
		got, err := decodeAll[row](writeParquet(t, rows, parquet.Compression(&parquet.Lz4Raw), parquet.DataPageVersion(v), parquet.PageBufferSize(4<<10)))
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if d := cmp.Diff(rows, got); d != "" {
			t.Fatalf("v%d: %s", v, d)
		}
	}
	// The same from DuckDB (testdata/delivery/make_nested.mjs).
	file := readFile(t, "lz4.parquet")
	got, err := decodeAll[row](file)
	if err != nil || len(got) != 3000 {
		t.Fatalf("%d rows, %v", len(got), err)
	}
	for i, r := range got {
		if want := (row{ID: int64(i) * 7919, Volume: float64(i) * 1.5, Note: fmt.Sprintf("%x", md5.Sum([]byte(fmt.Sprint(i))))}); r != want {
			t.Fatalf("row %d: %+v, want %+v", i, r, want)
		}
	}
	// parquet-go by itself reads it wrong. When this fails, parquet-go is
	// fixed, and LZ4_RAW columns need not go through the view.
	f, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	plain := make([]row, 3000)
	n, err := parquet.NewGenericReader[row](f).Read(plain)
	if err == nil && n == 3000 && cmp.Equal(plain, got) {
		t.Fatal("parquet-go reads LZ4_RAW right now: drop the LZ4_RAW rule of bigColumns")
	}
}

// gated is a file landing in order: reads of bytes from cut on, up to the
// footer, wait until open is closed (at most 10 s: then they fail, and
// stuck says so). ahead records whether any read was of those bytes.
type gated struct {
	file         []byte
	cut, footer  int64
	open         chan struct{}
	ahead, stuck atomic.Bool
}

func (g *gated) ReadAt(b []byte, off int64) (int, error) {
	if off < g.footer && off+int64(len(b)) > g.cut {
		g.ahead.Store(true)
		select {
		case <-g.open:
		case <-time.After(10 * time.Second):
			g.stuck.Store(true)
			return 0, fmt.Errorf("read of bytes %d-%d waited 10 s for the rest of the file to land", off, off+int64(len(b)))
		}
	}
	return bytes.NewReader(g.file).ReadAt(b, off)
}

// TestDecode_LandingReadsNothingAhead: a file landing in order (Decode's
// landing) whose chunks are over bigPage in pages under it (as DuckDB's
// 122,880-row groups are) gives its first row group's rows before the
// bytes after that group land: the view's check of big pages, which reads
// a page header in every row group, is not made. (Without landing it
// waited for the last row group's bytes before the first row.)
func TestDecode_LandingReadsNothingAhead(t *testing.T) {
	file := writeInflateFile(t, parquet.Compression(&parquet.Snappy), parquet.PageBufferSize(4<<10), parquet.MaxRowsPerRowGroup(400))
	want, err := decodeAll[inflateOut](file)
	if err != nil || len(want) != 1200 {
		t.Fatalf("%d rows, %v", len(want), err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
	if err != nil || len(f.Metadata().RowGroups) != 3 {
		t.Fatalf("%v; want 3 row groups", err)
	}
	md := f.Metadata()
	g := &gated{file: file, cut: math.MaxInt64, footer: int64(len(file)) - 8 - int64(binary.LittleEndian.Uint32(file[len(file)-8:])), open: make(chan struct{})}
	for _, c := range md.RowGroups[1].Columns {
		g.cut = min(g.cut, pagesAt(&c.MetaData))
	}
	withBigPage(t, 8<<10)
	// The file has what the check looks for: snappy chunks over bigPage
	// whose first pages are under it, read in every row group.
	close(g.open)
	for range bigColumns(g, md, false) {
		t.Fatal("a big page in a file of 4 KiB pages")
	}
	if !g.ahead.Load() {
		t.Fatal("the check of big pages read nothing past the first row group: the file does not test it")
	}

	g.open = make(chan struct{})
	var got []inflateOut
	for r, err := range Decode(g, int64(len(file)), formats.RowDecoder[inflateOut](slow, false), true) {
		if err != nil {
			t.Fatalf("after %d rows: %v", len(got), err)
		}
		if got = append(got, r); len(got) == 400 {
			close(g.open) // the first row group came out while the rest of the file had not landed
		}
	}
	if g.stuck.Load() {
		t.Fatal("a read of bytes past the first row group waited for them before its rows came out")
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatal(d)
	}
}
