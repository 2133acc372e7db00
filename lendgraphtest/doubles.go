package lendgraphtest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"sync"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// This file holds the building blocks of test doubles: values that stand
// in for the SDK's services in a unit test, with no server. A double of a
// service interface (lendgraph.AgentsAPI, lendgraph.EnrichmentAPI, ...) is
// a struct of the test's own; these helpers give it the job handles,
// pagers, iterators and search results the interfaces return.

// JobDouble is a scripted lendgraph.JobBackend: give it to
// lendgraph.NewEnrichJob or lendgraph.NewDeliveryJob, or use NewEnrichJob
// and NewDeliveryJob below, which build one. It is safe for concurrent use.
type JobDouble[S lendgraph.EnrichJobStatus | lendgraph.DeliveryStatus] struct {
	// Statuses are returned by successive Status calls; the last one
	// repeats. Give the last a terminal state (completed, failed or
	// cancelled), or Wait polls until its context ends.
	Statuses []S
	// File is the result file Open returns, as delivered (gzipped ndjson
	// for enrichment results and ndjson deliveries).
	File []byte
	// Err, when set, is returned by every call instead.
	Err error

	mu        sync.Mutex
	polls     int
	cancelled *S
	opens     int
}

// begin takes the double's lock for a call, or says why the call fails
// at once: ctx has ended, or Err is set.
func (d *JobDouble[S]) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	if d.Err != nil {
		d.mu.Unlock()
		return d.Err
	}
	return nil
}

func errNoStatus(id string) error {
	return fmt.Errorf("lendgraphtest: job %s: the double has no scripted status", id)
}

// Status returns the next scripted status record.
func (d *JobDouble[S]) Status(ctx context.Context, id string) (*S, error) {
	if err := d.begin(ctx); err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	d.polls++
	if d.cancelled != nil {
		st := *d.cancelled
		return &st, nil
	}
	if len(d.Statuses) == 0 {
		return nil, errNoStatus(id)
	}
	st := d.Statuses[min(d.polls, len(d.Statuses))-1]
	return &st, nil
}

// Cancel cancels the job as the API does: a queued or running job becomes
// cancelled (every later Status says so); a finished one answers 409, which
// matches lendgraph.ErrJobFinished.
func (d *JobDouble[S]) Cancel(ctx context.Context, id string) (*S, error) {
	if err := d.begin(ctx); err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	if len(d.Statuses) == 0 {
		return nil, errNoStatus(id)
	}
	cur := d.Statuses[min(max(d.polls, 1), len(d.Statuses))-1]
	if d.cancelled != nil || stateOf(&cur).Terminal() {
		return nil, &lendgraph.APIError{StatusCode: http.StatusConflict, Method: http.MethodDelete, Path: "job " + id, Message: "job already finished"}
	}
	setJobState(&cur, lendgraph.JobCancelled)
	d.cancelled = &cur
	st := cur
	return &st, nil
}

// Open returns the scripted result file.
func (d *JobDouble[S]) Open(ctx context.Context, id string) (io.ReadCloser, error) {
	if err := d.begin(ctx); err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	d.opens++
	return io.NopCloser(bytes.NewReader(d.File)), nil
}

// Polls reports how many times Status was called.
func (d *JobDouble[S]) Polls() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.polls
}

func stateOf[S lendgraph.EnrichJobStatus | lendgraph.DeliveryStatus](s *S) lendgraph.JobState {
	switch st := any(s).(type) {
	case *lendgraph.EnrichJobStatus:
		return st.Status
	case *lendgraph.DeliveryStatus:
		return st.Status
	}
	return ""
}

func setJobState[S lendgraph.EnrichJobStatus | lendgraph.DeliveryStatus](s *S, state lendgraph.JobState) {
	switch st := any(s).(type) {
	case *lendgraph.EnrichJobStatus:
		st.Status = state
	case *lendgraph.DeliveryStatus:
		st.Status = state
	}
}

// NewEnrichJob returns a handle on a scripted bulk enrichment job: Status
// and Wait see statuses in turn (the last repeats), ResultRows yields
// results, Download and Results give them as a gzipped ndjson file. With no
// statuses the job is already completed, every property matched.
func NewEnrichJob(id string, results []lendgraph.EnrichmentResultEntry, statuses ...lendgraph.EnrichJobStatus) *lendgraph.EnrichJob {
	if len(statuses) == 0 {
		var ok, failed int64
		for _, r := range results {
			if r.Error != "" {
				failed++
			} else {
				ok++
			}
		}
		statuses = []lendgraph.EnrichJobStatus{{Status: lendgraph.JobCompleted, Total: ok + failed, Succeeded: ok, Failed: failed, ChargedCount: ok}}
	}
	for i := range statuses {
		if statuses[i].JobID == "" {
			statuses[i].JobID = id
		}
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	enc := json.NewEncoder(zw)
	for _, r := range results {
		if err := enc.Encode(r); err != nil {
			panic(fmt.Sprintf("lendgraphtest.NewEnrichJob: result %q cannot be encoded: %v", r.PropertyID, err))
		}
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return lendgraph.NewEnrichJob(id, &JobDouble[lendgraph.EnrichJobStatus]{Statuses: statuses, File: buf.Bytes()})
}

// NewDeliveryJob returns a handle on a scripted bulk delivery job whose
// file holds rows in format, written as the API writes deliveries (ndjson
// gzipped; nested values as JSON strings in csv and parquet; a column for
// every member any row has): Rows yields them back, Download writes the
// file. Status and Wait see statuses in turn (the last repeats); with none
// the job is already completed. A status without Format gets format.
func NewDeliveryJob[T any](id string, format lendgraph.Format, rows []T, statuses ...lendgraph.DeliveryStatus) (*lendgraph.DeliveryJob[T], error) {
	file, err := EncodeRows(format, rows)
	if err != nil {
		return nil, err
	}
	if len(statuses) == 0 {
		n := int64(len(rows))
		statuses = []lendgraph.DeliveryStatus{{Status: lendgraph.JobCompleted, Processed: n, EstimatedTotal: n, ChargedCount: &n, Bytes: int64(len(file))}}
	}
	for i := range statuses {
		if statuses[i].Format == "" {
			statuses[i].Format = format
		}
		if statuses[i].JobID == "" {
			statuses[i].JobID = id
		}
	}
	j := lendgraph.NewDeliveryJob[T](id, &JobDouble[lendgraph.DeliveryStatus]{Statuses: statuses, File: file})
	j.Format, j.State = format, statuses[0].Status
	return j, nil
}

// EncodeRows writes rows as a delivery file in format, the way the fake
// API writes them.
func EncodeRows[T any](format lendgraph.Format, rows []T) ([]byte, error) {
	records := make([]Record, 0, len(rows))
	var columns []string
	seen := map[string]bool{}
	for i, r := range rows {
		rec, keys, err := recordOf(r)
		if err != nil {
			return nil, fmt.Errorf("lendgraphtest: row %d: %w", i, err)
		}
		// Every member any row has is a column (omitempty leaves members
		// out of some rows), in the order they first appear.
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				columns = append(columns, k)
			}
		}
		records = append(records, rec)
	}
	var sample Record
	if len(records) > 0 {
		sample = records[0]
	}
	var buf bytes.Buffer
	rw, err := newRowWriter(string(format), columns, sample, &buf)
	if err != nil {
		return nil, err
	}
	if err := rw.write(records); err != nil {
		return nil, err
	}
	if err := rw.close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// recordOf turns a row into the fake's record: its JSON members, integers
// as int64, other numbers as float64, and the member names in order.
func recordOf(v any) (Record, []string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, errors.New("a row must marshal to a JSON object")
	}
	rec := Record{}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		key, _ := tok.(string)
		var val any
		if err := dec.Decode(&val); err != nil {
			return nil, nil, err
		}
		rec[key] = plainNumbers(val)
		keys = append(keys, key)
	}
	return rec, keys, nil
}

func plainNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = plainNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = plainNumbers(e)
		}
	}
	return v
}

// Seq returns an iterator over items, the shape of the SDK's All methods:
// for a double's All. A non-nil err is yielded after the items.
func Seq[T any](items []T, err error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for _, it := range items {
			if !yield(it, nil) {
				return
			}
		}
		if err != nil {
			var zero T
			yield(zero, err)
		}
	}
}

// Pages returns a pager over the given pages, for a double's Pager or All
// (pages.All(ctx)). The cursor of page i+1 is its number ("2", "3", ...),
// so Cursor and resuming work as they do against the API. A non-nil err is
// what fetching the page after the last returns.
func Pages[T any](err error, pages ...[]T) *lendgraph.Pager[T] {
	return lendgraph.NewPager("", func(ctx context.Context, cursor string) ([]T, string, error) {
		if cerr := ctx.Err(); cerr != nil {
			return nil, "", cerr
		}
		i := 0
		if cursor != "" {
			n, perr := strconv.Atoi(cursor)
			if perr != nil || n < 1 || n > len(pages)+1 {
				return nil, "", fmt.Errorf("lendgraphtest.Pages: unknown cursor %q", cursor)
			}
			i = n - 1
		}
		if i == len(pages) { // the page after the last: only with err
			return nil, "", err
		}
		next := ""
		if i+1 < len(pages) || err != nil {
			next = strconv.Itoa(i + 2)
		}
		return pages[i], next, nil
	})
}

// HostResult returns a search-host answer holding hits, for a double of
// lendgraph.SearchHostAPI: each hit (a struct of yours, a
// lendgraph.OriginatorHit, a map) is encoded as the host would send it, so
// the test needs no JSON package. EstimatedTotalHits counts the hits.
func HostResult[T any](hits ...T) (*lendgraph.HostSearchResult, error) {
	res := &lendgraph.HostSearchResult{Hits: make([]json.RawMessage, 0, len(hits))}
	for i, h := range hits {
		b, err := json.Marshal(h)
		if err != nil {
			return nil, fmt.Errorf("lendgraphtest.HostResult: hit %d: %w", i, err)
		}
		res.Hits = append(res.Hits, b)
	}
	res.EstimatedTotalHits = int64(len(hits))
	return res, nil
}
