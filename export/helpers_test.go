package export_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// openDest opens the export directory dir (closed when the test ends).
func openDest(t testing.TB, dir string) *export.Storage {
	t.Helper()
	st, err := export.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// dirDest is a fresh export directory.
func dirDest(t testing.TB) *export.Storage { return openDest(t, filepath.Join(t.TempDir(), "export")) }

// memBucket is a fresh in-memory bucket, and the export's storage over it.
func memBucket(t testing.TB) (*blob.Bucket, *export.Storage) {
	t.Helper()
	b := memblob.OpenBucket(nil)
	t.Cleanup(func() { _ = b.Close() })
	return b, export.BucketStorage(b, "mem://test")
}

// readFile reads a file of the test's own.
func readFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeFile writes a file of the test's own.
func writeFile(t testing.TB, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// objects reads and writes the raw objects of an export, whatever its
// storage: the test's view of a directory or a bucket.
type objects interface {
	read(key string) ([]byte, error)
	write(key string, data []byte) error
	remove(key string) error
	list() ([]string, error)
}

// dirObjects are the files of an export directory.
type dirObjects string

func (d dirObjects) path(key string) string { return filepath.Join(string(d), filepath.FromSlash(key)) }
func (d dirObjects) read(key string) ([]byte, error) {
	return os.ReadFile(d.path(key))
}
func (d dirObjects) write(key string, data []byte) error {
	return os.WriteFile(d.path(key), data, 0o644)
}
func (d dirObjects) remove(key string) error { return os.Remove(d.path(key)) }
func (d dirObjects) list() ([]string, error) {
	var keys []string
	err := filepath.WalkDir(string(d), func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(string(d), p)
		keys = append(keys, filepath.ToSlash(rel))
		return nil
	})
	return keys, err
}

// bucketObjects are the objects of a bucket.
type bucketObjects struct{ b *blob.Bucket }

func (o bucketObjects) read(key string) ([]byte, error) {
	return o.b.ReadAll(context.Background(), key)
}
func (o bucketObjects) write(key string, data []byte) error {
	return o.b.WriteAll(context.Background(), key, data, nil)
}
func (o bucketObjects) remove(key string) error { return o.b.Delete(context.Background(), key) }
func (o bucketObjects) list() ([]string, error) {
	var keys []string
	it := o.b.List(nil)
	for {
		obj, err := it.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return keys, nil
		}
		if err != nil {
			return nil, err
		}
		keys = append(keys, obj.Key)
	}
}

// dataKeys are the data files (part-*) among keys.
func dataKeys(keys []string) []string {
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(filepath.Base(k), "part-") {
			out = append(out, k)
		}
	}
	return out
}

// scripted is c.Agents whose deliveries of some requests are scripted:
// deliver returns the rows (and, optionally, the status records) of a
// job double instead of submitting, or ok false to submit as usual. It
// counts the submits it received, scripted or not.
type scripted struct {
	*lendgraph.AgentsService
	deliver func(req *lendgraph.DeliveryRequest) (rows []lendgraph.Agent, statuses []lendgraph.DeliveryStatus, ok bool)

	mu       sync.Mutex
	jobs     map[string]*lendgraph.DeliveryJob[lendgraph.Agent]
	delivers int
}

// Deliver submits req, or returns the scripted job.
func (s *scripted) Deliver(ctx context.Context, req *lendgraph.DeliveryRequest, opts ...lendgraph.Option) (*lendgraph.DeliveryJob[lendgraph.Agent], error) {
	s.mu.Lock()
	s.delivers++
	n := s.delivers
	s.mu.Unlock()
	rows, statuses, ok := s.deliver(req)
	if !ok {
		return s.AgentsService.Deliver(ctx, req, opts...)
	}
	id := fmt.Sprintf("dlv_scripted_%d", n)
	job, err := lendgraphtest.NewDeliveryJob(id, req.Format, rows, statuses...)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobs == nil {
		s.jobs = map[string]*lendgraph.DeliveryJob[lendgraph.Agent]{}
	}
	s.jobs[id] = job
	return job, nil
}

// DeliveryJob returns a scripted job by its id, else the service's.
func (s *scripted) DeliveryJob(id string) *lendgraph.DeliveryJob[lendgraph.Agent] {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j, ok := s.jobs[id]; ok {
		return j
	}
	return s.AgentsService.DeliveryJob(id)
}

// submitted is the number of submits the source received.
func (s *scripted) submitted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.delivers
}

// agentsIn lists the fake's agents of a state.
func agentsIn(t testing.TB, c *lendgraph.Client, state string) []lendgraph.Agent {
	t.Helper()
	var out []lendgraph.Agent
	for a, err := range c.Agents.All(context.Background(), &lendgraph.ListRequest{FlatFilters: map[string]any{"state": state}, Pagination: &lendgraph.Pagination{Size: 100}}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// stateOf is the state a shard's request asks for.
func stateOf(req *lendgraph.DeliveryRequest) string {
	s, _ := req.FlatFilters["state"].(string)
	return s
}

// movedSource is c.Agents, except that the delivery of state `to` also
// holds the agents of state `from`, with their state set to `to`: records
// that moved from one shard to another between their two deliveries (the
// data is live). Each file holds only its shard's partition value.
func movedSource(t testing.TB, c *lendgraph.Client, from, to string) *scripted {
	moved := agentsIn(t, c, from)
	for i := range moved {
		moved[i].State = to
	}
	return &scripted{AgentsService: c.Agents, deliver: func(req *lendgraph.DeliveryRequest) ([]lendgraph.Agent, []lendgraph.DeliveryStatus, bool) {
		if stateOf(req) != to {
			return nil, nil, false
		}
		return append(agentsIn(t, c, to), moved...), nil, true
	}}
}

// shardFile is the key of the record (ext ".json") or id digest (".ids")
// of the shard called name.
func shardFile(p *export.Plan, name, ext string) string {
	for i, sh := range p.Shards {
		if sh.Name == name {
			return fmt.Sprintf("_shards/%05d%s", i, ext)
		}
	}
	panic("no shard " + name)
}

// envInt is the integer in the environment variable name, or def when it
// is unset or not a number.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}
