package pqrows

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"iter"
	"slices"
	"sort"
	"sync"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// Why a file with big compressed pages is read through a view of it.
//
// parquet-go decompresses a page in one call into memory it has just
// allocated. For snappy (and lz4) that call is assembly, which the Go
// runtime cannot preempt, and the first write to every 4 KiB of fresh
// memory is a page fault: a 70 MB page (DuckDB writes one page per column
// chunk, so a row group of 1M rows has them) is 17,000 faults inside one
// unpreemptible call. The allocation itself usually starts a GC cycle,
// which cannot finish before it has scanned that goroutine's stack: for
// the whole decompression the GC's workers spin trying to preempt it
// (slowing it three- to fourfold with their signals) and every other
// goroutine that allocates waits on the GC. Measured on a 2-core VM: the
// 70 MB page took 244 ms with the GC off and 834 ms with it on (22 ms into
// memory already touched), and decoding the one-group file lost ~0.8 s of
// wall time and ~1.5 s of CPU to it.
//
// The view presents the file with those columns stored uncompressed (the
// footer says UNCOMPRESSED and points past the end of the file, where the
// view serves each page, its header rewritten to match), so parquet-go
// only reads. A snappy page is decoded as parquet-go reads it, straight
// into its buffer, in Go (snappy.go): the faults happen where the GC can
// preempt, and no second copy of the page exists. An LZ4_RAW page (see
// bigColumns), a page of another codec in a column the view reads, and a
// page read out of order are decompressed whole into memory touched from
// Go first, and copied out copyChunk bytes at a time. gzip, zstd and
// brotli decode in Go, so their pages are left to parquet-go (the view
// measured slower for them), as are columns with no big snappy page.

// bigPage is the uncompressed size from which a snappy page is
// decompressed by the view; a variable for tests.
var bigPage int64 = 4 << 20

// copyChunk bounds each copy into parquet-go's fresh page buffer, so that
// its page faults happen in short, separately preemptible copies.
const copyChunk = 256 << 10

// maxHeader bounds a page header the view reads (statistics make some
// large); a chunk with a larger one is left as it is.
const maxHeader = 1 << 20

// inflate returns the view of the file r (size bytes, metadata md) that
// stores its big compressed pages uncompressed, or ok false when the file
// has none (or anything the view does not handle: the file is then read as
// it is, and parquet-go reports what is wrong with it).
//
// A column is inflated in every row group or in none: parquet-go takes a
// column's codec from its first row group.
func inflate(r io.ReaderAt, size int64, landing bool, md *format.FileMetaData) (v io.ReaderAt, vsize int64, ok bool) {
	if !inBounds(md, size) {
		return nil, 0, false // parquet-go has its own ways with such files
	}
	view := &inflated{r: r, size: size, end: size}
	var meta *format.FileMetaData // md's copy, rewritten, once a column is inflated
	for c := range bigColumns(r, md, landing) {
		chunks := view.column(md, c)
		if chunks == nil {
			continue
		}
		if meta == nil {
			meta = cloneMeta(md)
		}
		for g, ch := range chunks {
			cc := &meta.RowGroups[g].Columns[c]
			cc.MetaData.Codec = format.Uncompressed
			cc.MetaData.TotalCompressedSize = ch.end - ch.start
			cc.MetaData.DataPageOffset = ch.dataAt
			if cc.MetaData.DictionaryPageOffset != 0 {
				cc.MetaData.DictionaryPageOffset = ch.start
			}
			cc.MetaData.IndexPageOffset = 0
			cc.FileOffset = ch.start
			cc.OffsetIndexOffset, cc.OffsetIndexLength = 0, 0
			cc.ColumnIndexOffset, cc.ColumnIndexLength = 0, 0
		}
		view.chunks, view.end = append(view.chunks, chunks...), chunks[len(chunks)-1].end
	}
	if meta == nil {
		return nil, 0, false
	}
	footer, err := thrift.Marshal(new(thrift.CompactProtocol), meta)
	if err != nil {
		return nil, 0, false
	}
	n := len(footer)
	view.footer = append(footer, byte(n), byte(n>>8), byte(n>>16), byte(n>>24), 'P', 'A', 'R', '1')
	return view, view.end + int64(len(view.footer)), true
}

// cloneMeta copies md deep enough to rewrite its column chunks.
func cloneMeta(md *format.FileMetaData) *format.FileMetaData {
	meta := *md
	meta.RowGroups = slices.Clone(md.RowGroups)
	for g := range meta.RowGroups {
		meta.RowGroups[g].Columns = slices.Clone(meta.RowGroups[g].Columns)
	}
	return &meta
}

// column lays out column c of every row group at the view's end: nil
// unless the view can hold every chunk and one has a page it must
// decompress.
func (v *inflated) column(md *format.FileMetaData, c int) []*vchunk {
	at, must := v.end, false
	chunks := make([]*vchunk, 0, len(md.RowGroups))
	for _, rg := range md.RowGroups {
		ch, ok := v.chunk(&rg.Columns[c], at)
		if !ok {
			return nil
		}
		chunks, at, must = append(chunks, ch), ch.end, must || ch.must
	}
	if !must {
		return nil
	}
	return chunks
}

// pagesAt is where parquet-go starts reading a column chunk's pages: at
// its dictionary page if it records one, else at its first data page.
func pagesAt(m *format.ColumnMetaData) int64 {
	if m.DictionaryPageOffset != 0 {
		return m.DictionaryPageOffset
	}
	return m.DataPageOffset
}

// inBounds reports whether every column chunk of the file lies within it,
// as parquet-go reads it (from pagesAt, TotalCompressedSize bytes).
func inBounds(md *format.FileMetaData, size int64) bool {
	for _, rg := range md.RowGroups {
		for _, cc := range rg.Columns {
			m := &cc.MetaData
			start := pagesAt(m)
			if min(start, m.DataPageOffset) < 4 || m.TotalCompressedSize < 0 || m.TotalCompressedSize > size-start {
				return false
			}
		}
	}
	return true
}

// openInflated opens the view of the file r (opened as f), or returns nil
// when there is none or it does not open: the file is then read as it is.
func openInflated(r io.ReaderAt, size int64, landing bool, f *parquet.File, opts []parquet.FileOption) (vf *parquet.File) {
	v, vsize, ok := inflate(r, size, landing, f.Metadata())
	if !ok {
		return nil
	}
	defer func() {
		if recover() != nil {
			vf = nil // parquet-go panics on some footers; this one is ours
		}
	}()
	vf, err := parquet.OpenFile(v, vsize, opts...)
	if err != nil {
		return nil
	}
	return vf
}

// bigColumns yields the columns the view must read: those with a big
// snappy page (in some row group, a snappy chunk at least bigPage long
// whose first data page is: writers keep a column's pages about the same
// size; this reads one header a chunk, where laying a chunk out reads all
// of them), and every LZ4_RAW column. parquet-go v0.32.0 decompresses an
// LZ4_RAW page that compresses less than 3-fold into a buffer of its
// codec's own and then reads the one it had allocated for the page: zeros,
// or another page's bytes, with no error (TestInflate_LZ4). The view hands
// the codec a buffer of the page's size and keeps what it returns.
//
// A file still landing (Decode's landing) has only its LZ4_RAW columns
// read by the view: reading the headers of big chunks, and laying a column
// out, reads every row group, which would wait for the whole file before
// the first row. Its big snappy pages are left to parquet-go, whose stall
// on them costs less than decoding nothing until the last byte: DuckDB's
// files of 122,880-row groups have snappy chunks over bigPage in pages
// under it, and waited for the whole download at 16 MiB as at 256 MiB
// (BENCHMARKS.md). An LZ4_RAW file is still read right, once it is in.
func bigColumns(r io.ReaderAt, md *format.FileMetaData, landing bool) iter.Seq[int] {
	return func(yield func(int) bool) {
		if len(md.RowGroups) == 0 {
			return
		}
		for c := range md.RowGroups[0].Columns {
			for _, rg := range md.RowGroups {
				if c >= len(rg.Columns) {
					return // parquet-go refuses such a file
				}
				m := &rg.Columns[c].MetaData
				if m.Codec == format.Lz4Raw {
					if !yield(c) {
						return
					}
					break
				}
				if landing || m.Codec != format.Snappy || m.TotalUncompressedSize < bigPage {
					continue // gzip, zstd and brotli decode in Go: no stall to avoid
				}
				h, _, err := readHeader(r, m.DataPageOffset, pagesAt(m)+m.TotalCompressedSize)
				if err == nil && int64(h.UncompressedPageSize) >= bigPage {
					if !yield(c) {
						return
					}
					break
				}
			}
		}
	}
}

// inflated is the view: the file's bytes, then the inflated column chunks,
// then the new footer.
type inflated struct {
	r      io.ReaderAt
	size   int64 // of the file
	end    int64 // of the last chunk
	chunks []*vchunk
	footer []byte
}

// vchunk is an inflated column chunk at [start, end) of the view.
type vchunk struct {
	start, end, dataAt int64
	must               bool // it has a page the view must decompress (see bigColumns)
	file               io.ReaderAt
	codec              compress.Codec
	snappy             bool // decoded as a stream (snappy.go)
	column             string
	pages              []vpage

	mu  sync.Mutex
	cur int           // the page being read, -1 for none
	pos int64         // where the last read of its data ended
	z   []byte        // its stored bytes
	dec *snappyStream // decoding it a slice at a time, or
	out []byte        // it decompressed whole
}

// vpage is one page of an inflated chunk.
type vpage struct {
	at     int64  // view offset of the header
	header []byte // rewritten: stored uncompressed, no CRC
	size   int64  // of the data, uncompressed
	src    int64  // file offset of the stored data
	stored int64  // its size
	levels int64  // bytes stored uncompressed before the values (data page v2)
	packed bool   // the stored values are compressed
	crc    uint32 // of the stored data; checked when hasCRC
	hasCRC bool
}

// chunk reads the page headers of column chunk cc and lays them out at
// view offset at, or ok false when the view cannot hold it (an empty
// chunk included: it has no first data page).
func (v *inflated) chunk(cc *format.ColumnChunk, at int64) (ch *vchunk, ok bool) {
	md := &cc.MetaData
	if cc.FilePath != "" || cc.CryptoMetadata.Value != nil || len(cc.EncryptedColumnMetadata) > 0 {
		return nil, false
	}
	// The chunk's pages as parquet-go finds them (inflate checked that
	// they lie within the file: inBounds).
	base := pagesAt(md)
	stop := base + md.TotalCompressedSize
	ch = &vchunk{start: at, dataAt: -1, file: v.r, codec: parquet.LookupCompressionCodec(md.Codec), snappy: md.Codec == format.Snappy, column: fmt.Sprint(md.PathInSchema), cur: -1}
	for off := base; off < stop; {
		h, n, err := readHeader(v.r, off, stop)
		if err != nil || h.CompressedPageSize < 0 || h.UncompressedPageSize < 0 {
			return nil, false
		}
		p := vpage{at: at, size: int64(h.UncompressedPageSize), src: off + n, stored: int64(h.CompressedPageSize), packed: md.Codec != format.Uncompressed}
		if p.src+p.stored > stop {
			return nil, false
		}
		if h.CRC != 0 {
			p.crc, p.hasCRC = uint32(h.CRC), true
		}
		if h.Type == format.DataPageV2 && h.DataPageHeaderV2.Valid {
			d := h.DataPageHeaderV2.V
			p.levels = int64(d.RepetitionLevelsByteLength) + int64(d.DefinitionLevelsByteLength)
			p.packed = p.packed && (!d.IsCompressed.Valid || d.IsCompressed.V) // compressed unless it says not
			if p.levels < 0 || p.levels > p.stored || p.levels > p.size {
				return nil, false
			}
		}
		if p.header, ok = storedHeader(h); !ok {
			return nil, false // an index page, or what the view does not know
		}
		if !p.packed && p.stored != p.size || p.packed && ch.snappy && !v.snappyFits(&p) {
			return nil, false
		}
		if off == md.DataPageOffset {
			ch.dataAt = at
		}
		ch.must = ch.must || p.packed && (md.Codec == format.Snappy && p.size >= bigPage || md.Codec == format.Lz4Raw)
		at += int64(len(p.header)) + p.size
		ch.pages = append(ch.pages, p)
		off = p.src + p.stored
	}
	if ch.dataAt < 0 {
		return nil, false
	}
	ch.end = at
	return ch, true
}

// storedHeader is the header of page h stored uncompressed: the fields
// parquet-go reads, no CRC (the view checks it) and no statistics.
func storedHeader(h *format.PageHeader) ([]byte, bool) {
	out := &format.PageHeader{Type: h.Type, UncompressedPageSize: h.UncompressedPageSize, CompressedPageSize: h.UncompressedPageSize}
	switch {
	case h.Type == format.DataPage && h.DataPageHeader.Valid:
		d := &h.DataPageHeader.V
		out.DataPageHeader = thrift.New(format.DataPageHeader{NumValues: d.NumValues, Encoding: d.Encoding,
			DefinitionLevelEncoding: d.DefinitionLevelEncoding, RepetitionLevelEncoding: d.RepetitionLevelEncoding})
	case h.Type == format.DictionaryPage && h.DictionaryPageHeader.Valid:
		d := &h.DictionaryPageHeader.V
		out.DictionaryPageHeader = thrift.New(format.DictionaryPageHeader{NumValues: d.NumValues, Encoding: d.Encoding, IsSorted: d.IsSorted})
	case h.Type == format.DataPageV2 && h.DataPageHeaderV2.Valid:
		d := &h.DataPageHeaderV2.V
		out.DataPageHeaderV2 = thrift.New(format.DataPageHeaderV2{NumValues: d.NumValues, NumNulls: d.NumNulls, NumRows: d.NumRows,
			Encoding: d.Encoding, DefinitionLevelsByteLength: d.DefinitionLevelsByteLength,
			RepetitionLevelsByteLength: d.RepetitionLevelsByteLength, IsCompressed: thrift.New(false)})
	default:
		return nil, false
	}
	b, err := thrift.Marshal(new(thrift.CompactProtocol), out)
	return b, err == nil
}

// snappyFits reports whether the snappy block of page p says it decodes
// to the size the page header says, within the 22-fold that snappy can
// expand to: the view allocates no more for a page than its bytes allow.
func (v *inflated) snappyFits(p *vpage) bool {
	var head [binary.MaxVarintLen64]byte
	stored := p.stored - p.levels
	k, _ := v.r.ReadAt(head[:min(int64(len(head)), stored)], p.src+p.levels)
	n, w := binary.Uvarint(head[:k])
	return w > 0 && n == uint64(p.size-p.levels) && p.size-p.levels <= 22*stored+16
}

// readHeader decodes the page header at off (before stop).
func readHeader(r io.ReaderAt, off, stop int64) (*format.PageHeader, int64, error) {
	if off < 0 || stop <= off {
		return nil, 0, errCorrupt
	}
	for window := int64(16 << 10); ; window *= 4 {
		buf := make([]byte, min(window, stop-off))
		if n, err := r.ReadAt(buf, off); n < len(buf) {
			return nil, 0, cmp.Or(err, io.ErrUnexpectedEOF)
		}
		in := new(thrift.CompactProtocol).NewReaderFromBytes(buf)
		h := new(format.PageHeader)
		if err := thrift.NewDecoder(in).Decode(h); err == nil {
			return h, int64(in.BytesRead()), nil
		} else if int64(len(buf)) == stop-off || window >= maxHeader {
			return nil, 0, err
		}
	}
}

// ReadAt reads the view: the file, the inflated chunks, the footer.
func (v *inflated) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	n := 0
	for len(p) > 0 {
		var k int
		var err error
		switch {
		case off < v.size:
			k, err = v.r.ReadAt(p[:min(int64(len(p)), v.size-off)], off)
		case off < v.end:
			i := sort.Search(len(v.chunks), func(i int) bool { return v.chunks[i].end > off })
			k, err = v.chunks[i].readAt(p[:min(int64(len(p)), v.chunks[i].end-off)], off)
		case off < v.end+int64(len(v.footer)):
			k = copy(p, v.footer[off-v.end:])
		default:
			return n, io.EOF
		}
		n, off, p = n+k, off+int64(k), p[k:]
		if err != nil && !(errors.Is(err, io.EOF) && k > 0) || k == 0 {
			return n, cmp.Or(err, io.ErrUnexpectedEOF)
		}
	}
	return n, nil
}

// readAt reads the chunk's pages at off (p ends within the chunk).
func (c *vchunk) readAt(p []byte, off int64) (int, error) {
	n := 0
	for len(p) > 0 {
		i := sort.Search(len(c.pages), func(i int) bool { return c.pages[i].at > off }) - 1
		pg := &c.pages[i]
		var k int
		if h := off - pg.at; h < int64(len(pg.header)) {
			k = copy(p, pg.header[h:])
		} else {
			var err error
			if k, err = c.data(i, p, h-int64(len(pg.header))); err != nil {
				return n, err
			}
		}
		if k == 0 {
			return n, io.ErrUnexpectedEOF // never: every page's bytes are its header's and its data's
		}
		n, off, p = n+k, off+int64(k), p[k:]
	}
	return n, nil
}

// data copies page i's uncompressed data from at into p: a snappy page
// decoded straight into p as parquet-go reads it in order, any other (or
// one read out of order) decompressed whole and copied.
func (c *vchunk) data(i int, p []byte, at int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pg := &c.pages[i]
	p = p[:min(int64(len(p)), pg.size-at)]
	err := c.fill(i, pg, p, at)
	if err == nil && c.pos == pg.size && c.dec != nil && !c.dec.finished() {
		err = fmt.Errorf("decompressing: %w: %w", errSnappy, parquet.ErrCorrupted)
	}
	if err != nil || c.pos == pg.size {
		c.cur, c.dec, c.out, c.z = -1, nil, nil, nil // parquet-go has the page now
	}
	if err != nil {
		return 0, fmt.Errorf("column %s, page at file offset %d: %w", c.column, pg.src, err)
	}
	return len(p), nil
}

// fill copies page i's data at [at, at+len(p)) into p.
func (c *vchunk) fill(i int, pg *vpage, p []byte, at int64) error {
	if c.cur != i {
		if err := c.open(i, pg); err != nil {
			return err
		}
	}
	if c.out == nil && (c.dec == nil || at != c.pos) {
		if err := c.whole(pg); err != nil {
			return err
		}
	}
	c.pos = at + int64(len(p))
	if c.out == nil {
		k := 0
		if at < pg.levels {
			k = copy(p, c.z[at:pg.levels])
		}
		err := c.dec.read(p[k:])
		if !errors.Is(err, errFar) {
			if err != nil {
				err = fmt.Errorf("decompressing: %w: %w", err, parquet.ErrCorrupted)
			}
			return err
		}
		if err := c.whole(pg); err != nil {
			return err
		}
	}
	for k := 0; k < len(p); k += copyChunk {
		copy(p[k:min(len(p), k+copyChunk)], c.out[at+int64(k):])
	}
	return nil
}

// open reads page i's stored bytes and checks their CRC.
func (c *vchunk) open(i int, pg *vpage) error {
	c.cur, c.pos, c.dec, c.out = i, 0, nil, nil
	c.z = make([]byte, pg.stored)
	if n, err := c.file.ReadAt(c.z, pg.src); n < len(c.z) {
		c.cur = -1
		return err
	}
	if pg.hasCRC && crc32.ChecksumIEEE(c.z) != pg.crc {
		c.cur = -1
		return fmt.Errorf("crc32 checksum mismatch: %w", parquet.ErrCorrupted)
	}
	switch {
	case !pg.packed:
		c.out = c.z
	case c.snappy:
		var err error
		if c.dec, err = newSnappyStream(c.z[pg.levels:], pg.size-pg.levels); err != nil {
			c.cur = -1
			return fmt.Errorf("decompressing: %w: %w", err, parquet.ErrCorrupted)
		}
	}
	return nil
}

// whole decompresses the page into c.out.
func (c *vchunk) whole(pg *vpage) error {
	out := make([]byte, pg.size)
	// Touch every memory page of out from Go, where the GC can preempt
	// this goroutine, before the decompressor writes it in one call.
	for i := 0; i < len(out); i += 4096 {
		out[i] = 0
	}
	copy(out, c.z[:pg.levels])
	dst := out[pg.levels:]
	got, err := c.codec.Decode(dst, c.z[pg.levels:])
	if err != nil {
		return fmt.Errorf("decompressing: %w", err)
	}
	if len(got) != len(dst) {
		return fmt.Errorf("decompressed to %d bytes, the page header says %d: %w", len(got), len(dst), parquet.ErrCorrupted)
	}
	if len(got) > 0 && unsafe.SliceData(got) != unsafe.SliceData(dst) {
		copy(dst, got)
	}
	c.out, c.dec = out, nil
	return nil
}
