package export

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
)

// bucketIDs is the number of ids the duplicate check holds in memory at
// once: below it everything stays in one map; above it the ids are spilled
// to bucket files by hash and each bucket is checked on its own, so memory
// stays near that of bucketIDs ids whatever the dataset's size (see
// BenchmarkDuplicateCheck: 10M ids).
const bucketIDs = 1 << 18

// maxExamples is how many duplicates a check reports by id.
const maxExamples = 10

// idSet finds ids that occur more than once among many, in bounded memory.
// Add may be called from several goroutines.
type idSet struct {
	expected int64 // ids expected in all, to size the buckets
	tmp      string

	mu      sync.Mutex
	mem     map[string]int32 // id → first shard, until spilled
	twice   map[string]int32 // id → second shard, for ids in mem seen again
	seed    maphash.Seed
	files   []*os.File
	writers []*bufio.Writer
	n       int64
	buf     []byte

	peak func() // test hook: called where memory peaks
}

// newIDSet returns a set for about expected ids, spilling to files in a
// temporary directory under tmp ("" for the system's) once it holds more
// than bucketIDs.
func newIDSet(expected int64, tmp string) *idSet {
	return &idSet{expected: expected, tmp: tmp, mem: map[string]int32{}, twice: map[string]int32{}, seed: maphash.MakeSeed()}
}

// dupFound is one id seen twice, with its shards (indexes).
type dupFound struct {
	id     string
	shards [2]int32
}

// Add records that shard holds id.
func (s *idSet) Add(id string, shard int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if s.files != nil {
		return s.write(id, shard)
	}
	if _, ok := s.mem[id]; ok {
		if _, ok := s.twice[id]; !ok {
			s.twice[id] = shard
		}
		return nil
	}
	s.mem[id] = shard
	if len(s.mem) < bucketIDs {
		return nil
	}
	return s.spill()
}

// spill moves the in-memory ids to bucket files.
func (s *idSet) spill() error {
	if s.peak != nil {
		s.peak() // the in-memory map is at its largest
	}
	n := int(max(16, 2*max(s.expected, s.n)/bucketIDs+1))
	dir, err := os.MkdirTemp(s.tmp, "lendgraph-export-ids-*")
	if err != nil {
		return fmt.Errorf("export: duplicate check: %w", err)
	}
	s.tmp = dir
	s.files = make([]*os.File, n)
	s.writers = make([]*bufio.Writer, n)
	for i := range n {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("bucket-%05d", i)))
		if err != nil {
			return fmt.Errorf("export: duplicate check: %w", err)
		}
		s.files[i] = f
		s.writers[i] = bufio.NewWriterSize(f, 32<<10)
	}
	for id, shard := range s.mem {
		if err := s.write(id, shard); err != nil {
			return err
		}
	}
	for id, shard := range s.twice {
		if err := s.write(id, shard); err != nil {
			return err
		}
	}
	s.mem, s.twice = nil, nil
	return nil
}

// write appends one (shard, id) record to the id's bucket.
func (s *idSet) write(id string, shard int32) error {
	b := s.writers[maphash.String(s.seed, id)%uint64(len(s.writers))]
	s.buf = binary.AppendUvarint(s.buf[:0], uint64(shard))
	s.buf = binary.AppendUvarint(s.buf, uint64(len(id)))
	s.buf = append(s.buf, id...)
	if _, err := b.Write(s.buf); err != nil {
		return fmt.Errorf("export: duplicate check: %w", err)
	}
	return nil
}

// Check reads the buckets back one at a time and reports the ids seen more
// than once: how many, and up to maxExamples of them.
func (s *idSet) Check() (int64, []dupFound, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		if s.peak != nil {
			s.peak()
		}
		var examples []dupFound
		for _, id := range slices.Sorted(maps.Keys(s.twice)) {
			if len(examples) == maxExamples {
				break
			}
			examples = append(examples, dupFound{id: id, shards: [2]int32{s.mem[id], s.twice[id]}})
		}
		return int64(len(s.twice)), examples, nil
	}
	for _, w := range s.writers {
		if err := w.Flush(); err != nil {
			return 0, nil, fmt.Errorf("export: duplicate check: %w", err)
		}
	}
	var count int64
	var examples []dupFound
	for _, f := range s.files {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return 0, nil, err
		}
		seen := map[string]int32{}
		twice := map[string]bool{}
		r := bufio.NewReaderSize(f, 64<<10)
		for {
			shard, err := binary.ReadUvarint(r)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return 0, nil, fmt.Errorf("export: duplicate check: reading a bucket: %w", err)
			}
			n, err := binary.ReadUvarint(r)
			if err != nil || n > 1<<20 {
				return 0, nil, fmt.Errorf("export: duplicate check: a damaged bucket (%v)", err)
			}
			b := make([]byte, n)
			if _, err := io.ReadFull(r, b); err != nil {
				return 0, nil, fmt.Errorf("export: duplicate check: reading a bucket: %w", err)
			}
			id := string(b)
			first, ok := seen[id]
			if !ok {
				seen[id] = int32(shard)
				continue
			}
			if !twice[id] {
				twice[id] = true
				count++
				if len(examples) < maxExamples {
					examples = append(examples, dupFound{id: id, shards: [2]int32{first, int32(shard)}})
				}
			}
		}
		if s.peak != nil {
			s.peak()
			runtime.KeepAlive(seen)
		}
	}
	return count, examples, nil
}

// Close removes the bucket files.
func (s *idSet) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	for _, f := range s.files {
		err = errors.Join(err, f.Close())
	}
	if s.files != nil {
		err = errors.Join(err, os.RemoveAll(s.tmp))
	}
	s.files, s.writers, s.mem, s.twice = nil, nil, nil, nil
	return err
}
