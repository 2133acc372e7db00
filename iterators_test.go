package lendgraph_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// The iterator contract (doc.go), held for every iter.Seq2 the SDK
// returns: a second range starts over and never skips or invents a row;
// concurrent ranges are independent or refused with an error; break and
// panics return at once, leaving nothing behind, however stalled the
// network; cancellation ends with the context's error and cause.

// iterCase is one iterator of the SDK, its rows reduced to keys.
type iterCase struct {
	name string
	// seq returns a new sequence value bound to ctx.
	seq func(ctx context.Context) iter.Seq2[string, error]
	// want is every key, in order.
	want []string
	// shared: two ranges of one value share a cursor or a reader, so a
	// second concurrent range is refused.
	shared bool
	// page is the page size of a list (0: not a list).
	page int
}

// iterFixture is a fake with data behind every iterator of the SDK, and
// the files of a delivery and of an enrichment job.
type iterFixture struct {
	srv      *lendgraphtest.Server
	c        *lendgraph.Client
	jobs     map[lendgraph.Format]*lendgraph.DeliveryJob[lendgraph.Agent]
	files    map[lendgraph.Format][]byte
	enrich   *lendgraph.EnrichJob
	results  []byte
	agents   []string
	rowIDs   []string // of the deliveries
	resultID []string
}

func newIterFixture(t *testing.T, c func(srv *lendgraphtest.Server) *lendgraph.Client) *iterFixture {
	t.Helper()
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(400),
		lendgraphtest.WithRows("agents", 120), lendgraphtest.WithRows("originators", 3),
		lendgraphtest.WithRows("loans", 1200), lendgraphtest.WithRows("companies", 4))
	f := &iterFixture{srv: srv, c: srv.Client(), jobs: map[lendgraph.Format]*lendgraph.DeliveryJob[lendgraph.Agent]{},
		files: map[lendgraph.Format][]byte{}}
	ctx := context.Background()
	for _, format := range allFormats {
		job, _ := deliver(t, f.c, &lendgraph.DeliveryRequest{Format: format})
		var buf bytes.Buffer
		if _, err := job.Download(ctx, &buf); err != nil {
			t.Fatal(err)
		}
		f.jobs[format], f.files[format] = job, buf.Bytes()
	}
	f.agents = ids(collect(t, f.c.Agents.All(ctx, nil)), agentID)
	f.rowIDs = ids(collect(t, f.jobs[lendgraph.FormatCSV].Rows(ctx)), agentID)
	job, err := f.c.Properties.EnrichBulk(ctx, propertyIDs(srv, 150), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.Wait(ctx, lendgraph.WithPollInterval(time.Millisecond, 5*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	f.enrich = job
	var rb bytes.Buffer
	if _, err := job.Download(ctx, &rb); err != nil {
		t.Fatal(err)
	}
	f.results = rb.Bytes()
	for e, err := range job.ResultRows(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		f.resultID = append(f.resultID, e.PropertyID)
	}
	if c != nil {
		f.c = c(srv)
	}
	return f
}

func (f *iterFixture) cases(t *testing.T) []iterCase {
	t.Helper()
	c, ctx := f.c, context.Background()
	agentsReq := &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 25}}
	title := &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 3}}
	branches := &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 20}}
	chart := &lendgraph.ChartRequest{Slice: "city", ListRequest: lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 5}}}
	key := func(s string) string { return s }
	list := func(seq iter.Seq2[string, error]) []string { return collect(t, seq) }
	cs := []iterCase{
		{name: "Agents.All", page: 25, seq: func(ctx context.Context) iter.Seq2[string, error] {
			return keyed(c.Agents.All(ctx, agentsReq), agentID)
		}},
		{name: "Pager.All", page: 25, shared: true, seq: func(ctx context.Context) iter.Seq2[string, error] {
			p, err := c.Agents.Pager(agentsReq)
			if err != nil {
				t.Fatal(err)
			}
			return keyed(p.All(ctx), agentID)
		}},
		{name: "AllTitleCompanies", page: 3, seq: func(ctx context.Context) iter.Seq2[string, error] {
			return keyed(c.Originators.AllTitleCompanies(ctx, "1000001", title), func(r lendgraph.TitleCompanyRow) string { return r.ID })
		}},
		{name: "AllBranches", page: 20, seq: func(ctx context.Context) iter.Seq2[string, error] {
			return keyed(c.Companies.AllBranches(ctx, "2000001", branches), func(b lendgraph.Branch) string { return b.ID })
		}},
		{name: "AllChart", page: 5, seq: func(ctx context.Context) iter.Seq2[string, error] {
			return keyed(c.Properties.AllChart(ctx, chart), func(r lendgraph.ChartRow) string { return r.ID })
		}},
		{name: "Enrichments", page: 100, seq: func(ctx context.Context) iter.Seq2[string, error] {
			return keyed(c.Properties.AllEnrichments(ctx, nil), func(e lendgraph.EnrichmentEntry) string { return e.PropertyID })
		}},
		{name: "EnrichJob.ResultRows", want: f.resultID, seq: func(ctx context.Context) iter.Seq2[string, error] {
			return keyed(c.Properties.EnrichJob(f.enrich.ID).ResultRows(ctx), func(e lendgraph.EnrichmentResultEntry) string { return e.PropertyID })
		}},
		{name: "DecodeEnrichmentResults", want: f.resultID, shared: true, seq: func(context.Context) iter.Seq2[string, error] {
			return keyed(lendgraph.DecodeEnrichmentResults(bytes.NewReader(f.results)), func(e lendgraph.EnrichmentResultEntry) string { return e.PropertyID })
		}},
	}
	for _, format := range allFormats {
		cs = append(cs, iterCase{name: "DeliveryJob.Rows/" + string(format), want: f.rowIDs, seq: func(ctx context.Context) iter.Seq2[string, error] {
			return keyed(jobRows(ctx, c.Agents.DeliveryJob(f.jobs[format].ID), format), agentID)
		}}, iterCase{name: "DecodeRows/" + string(format), want: f.rowIDs, shared: true, seq: func(context.Context) iter.Seq2[string, error] {
			return keyed(lendgraph.DecodeRows[lendgraph.Agent](bytes.NewReader(f.files[format]), format), agentID)
		}})
	}
	for i := range cs {
		if cs[i].want == nil {
			cs[i].want = list(cs[i].seq(ctx))
		}
		if len(cs[i].want) < 6 {
			t.Fatalf("%s: only %d rows", cs[i].name, len(cs[i].want))
		}
	}
	_ = key
	return cs
}

// TestIterators_StartOver: ranging the same value again after a break or
// after a full read yields every row from the first (issue 17 item 2),
// for every iterator; a pager left mid-page reads that page again.
func TestIterators_StartOver(t *testing.T) {
	noLeaks(t)
	f := newIterFixture(t, nil)
	ctx := context.Background()
	for _, ic := range f.cases(t) {
		t.Run(ic.name, func(t *testing.T) {
			seq := ic.seq(ctx)
			got, err := rangeUntil(seq, 4)
			if err != nil || !slices.Equal(got, ic.want[:4]) {
				t.Fatalf("first range: %v, %v", got, err)
			}
			got, err = rangeUntil(seq, -1)
			if err != nil {
				t.Fatalf("second range: %v", err)
			}
			if d := cmp.Diff(ic.want, got); d != "" {
				t.Fatalf("second range after a break (-want +got):\n%s", d)
			}
			got, err = rangeUntil(seq, -1)
			if d := cmp.Diff(ic.want, got); d != "" || err != nil {
				t.Fatalf("third range after a full read: %v (-want +got):\n%s", err, d)
			}
		})
	}
}

// TestIterators_ConcurrentRanges (item 3): independent ranges are safe;
// ranges that would share a cursor or a reader are refused with an error,
// never a silent short read or a data race.
func TestIterators_ConcurrentRanges(t *testing.T) {
	noLeaks(t)
	f := newIterFixture(t, nil)
	ctx := context.Background()
	for _, ic := range f.cases(t) {
		t.Run(ic.name, func(t *testing.T) {
			seq := ic.seq(ctx)
			// The first range holds its loop open until the second is done.
			inside, done := make(chan struct{}), make(chan struct{})
			var first []string
			var firstErr error
			var wg sync.WaitGroup
			wg.Go(func() {
				for k, err := range seq {
					if err != nil {
						firstErr = err
						break
					}
					first = append(first, k)
					if len(first) == 1 {
						close(inside)
						<-done
					}
				}
			})
			<-inside
			second, err := rangeUntil(seq, -1)
			close(done)
			wg.Wait()
			if firstErr != nil || !slices.Equal(first, ic.want) {
				t.Fatalf("first range: %d rows, %v", len(first), firstErr)
			}
			if ic.shared {
				if err == nil || len(second) != 0 || !strings.Contains(err.Error(), "already being ranged") {
					t.Fatalf("second concurrent range of a shared sequence: %d rows, %v; want a refusal", len(second), err)
				}
				return
			}
			if err != nil || !slices.Equal(second, ic.want) {
				t.Fatalf("second concurrent range: %d rows, %v", len(second), err)
			}
		})
	}
	// Many goroutines on one All value: every one reads every row.
	seq := f.c.Agents.All(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 10}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got := ids(collect(t, seq), agentID); !slices.Equal(got, f.agents) {
				t.Errorf("a concurrent range read %d of %d rows", len(got), len(f.agents))
			}
		})
	}
	wg.Wait()
	// NextPage while a loop runs on the same pager is refused too.
	p, _ := f.c.Agents.Pager(&lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 10}})
	for range p.All(ctx) {
		if _, err := p.NextPage(ctx); err == nil || !strings.Contains(err.Error(), "already being ranged") {
			t.Fatalf("NextPage inside a loop: %v", err)
		}
		break
	}
}

// TestIterators_ReaderThatCannotSeek: a second range over a reader
// that cannot be rewound is an error, never rows taken from the middle of
// the stream (item 6: a csv data row taken as the header).
func TestIterators_ReaderThatCannotSeek(t *testing.T) {
	f := newIterFixture(t, nil)
	// parquet is read at offsets (parquet.Decode takes an io.ReaderAt): no
	// reader to consume.
	for _, format := range []lendgraph.Format{lendgraph.FormatNDJSON, lendgraph.FormatJSON, lendgraph.FormatCSV} {
		seq := lendgraph.DecodeRows[lendgraph.Agent](io.MultiReader(bytes.NewReader(f.files[format])), format)
		got, err := rangeUntil(keyed(seq, agentID), 10)
		if err != nil || !slices.Equal(got, f.rowIDs[:10]) {
			t.Fatalf("%s: %v %v", format, got, err)
		}
		var rows int
		var last error
		for a, err := range seq {
			if err != nil {
				last = err
				break
			}
			if a.ID == "" {
				t.Fatalf("%s: an invented row %+v", format, a)
			}
			rows++
		}
		if rows != 0 || last == nil || !strings.Contains(last.Error(), "cannot seek back") {
			t.Fatalf("%s: second range over a consumed reader: %d rows, %v", format, rows, last)
		}
	}
	seq := lendgraph.DecodeEnrichmentResults(io.MultiReader(bytes.NewReader(f.results)))
	if got, err := rangeUntil(keyed(seq, func(e lendgraph.EnrichmentResultEntry) string { return e.PropertyID }), -1); err != nil || len(got) != len(f.resultID) {
		t.Fatal(len(got), err)
	}
	if _, err := rangeUntil(keyed(seq, func(e lendgraph.EnrichmentResultEntry) string { return e.PropertyID }), -1); err == nil {
		t.Fatal("second range over a consumed reader gave no error")
	}
}

// TestIterators_EmptyFiles (item 6): a 0-byte file is an error in every
// format; a file of no rows is not.
func TestIterators_EmptyFiles(t *testing.T) {
	for _, format := range allFormats {
		rows, err := decodeAll[lendgraph.Agent](t, nil, format)
		var re *lendgraph.RowError
		if !errors.As(err, &re) || len(rows) != 0 || re.Format != string(format) || re.Row != 0 || !strings.Contains(err.Error(), "empty") {
			t.Errorf("%s, 0 bytes: %d rows, %v; want a *RowError naming the format, at row 0, saying the file is empty", format, len(rows), err)
		}
	}
	for format, b := range map[lendgraph.Format][]byte{
		lendgraph.FormatNDJSON: gzipBytes(""),
		lendgraph.FormatCSV:    []byte("id,fullName\n"),
		lendgraph.FormatJSON:   []byte("[]"),
	} {
		if rows, err := decodeAll[lendgraph.Agent](t, b, format); err != nil || len(rows) != 0 {
			t.Errorf("%s with no rows: %d rows, %v", format, len(rows), err)
		}
	}
}

// TestIterators_BreakWhileTheDownloadStalls (item 1): breaking out of Rows, or
// panicking in its loop, while the storage download is stalled mid-body
// returns at once and leaves no goroutine behind.
func TestIterators_BreakWhileTheDownloadStalls(t *testing.T) {
	proxy := newFaultProxy(t)
	srv, _ := newDeliveryServer(t)
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 5000})
	c := proxy.Client(srv)
	for _, format := range []lendgraph.Format{lendgraph.FormatNDJSON, lendgraph.FormatJSON, lendgraph.FormatCSV} {
		job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: format, Limit: 3000})
		for _, how := range []string{"break", "panic"} {
			ignore := goleak.IgnoreCurrent()
			proxy.SetScript(firstN("GET", "/objects/*", 1, proxyFault{Kind: pfStallBody, Delay: 10 * time.Second}))
			n := 0
			var stopped time.Time
			func() {
				defer func() {
					if p := recover(); p != nil && p != "boom" {
						panic(p)
					}
				}()
				for _, err := range job.Rows(context.Background()) {
					if err != nil {
						t.Fatalf("%s: %v", format, err)
					}
					if n++; n == 10 {
						stopped = time.Now()
						if how == "panic" {
							panic("boom")
						}
						break
					}
				}
			}()
			if took := time.Since(stopped); n != 10 || took > time.Second {
				t.Fatalf("%s %s at row 10 of a stalled download: returned after %s (%d rows)", format, how, took, n)
			}
			if err := goleak.Find(append([]goleak.Option{ignore}, httpIdle...)...); err != nil {
				t.Fatalf("%s %s: %v", format, how, err)
			}
		}
	}
}

// TestIterators_CancelGivesTheCause (item 4): cancelling with a cause
// ends every iterator at the next element with an error matching both
// context.Canceled and the cause; no row comes after the cancel.
func TestIterators_CancelGivesTheCause(t *testing.T) {
	noLeaks(t)
	f := newIterFixture(t, nil)
	cause := errors.New("the operator pressed stop")
	for _, ic := range f.cases(t) {
		if strings.HasPrefix(ic.name, "Decode") {
			continue // no context
		}
		t.Run(ic.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			n, extra := 0, 0
			var last error
			for _, err := range ic.seq(ctx) {
				if err != nil {
					last = err
					break
				}
				if n == 3 {
					extra++ // a row after the cancel
					continue
				}
				if n++; n == 3 {
					cancel(cause)
				}
			}
			if !errors.Is(last, context.Canceled) || !errors.Is(last, cause) {
				t.Fatalf("after the cancel: %v; want an error matching context.Canceled and the cause", last)
			}
			if extra != 0 {
				t.Fatalf("%d rows came after the cancel", extra)
			}
			// A deadline with a cause, the same way.
			ctx, stop := context.WithTimeoutCause(context.Background(), 0, cause)
			defer stop()
			_, err := rangeUntil(ic.seq(ctx), -1)
			if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, cause) {
				t.Fatalf("expired context: %v", err)
			}
		})
	}
}

// TestIterators_RandomStopsUnderFaults breaks, panics and cancels at random rows and
// moments in every iterator while a fault proxy stalls, trickles, cuts or
// resets the connections it reads from, and checks the contract each
// time: the loop returns within a bound, nothing is left behind, the rows
// are the true rows in order (none skipped or invented), a range of the
// same value afterwards yields every row from the first, and a cancel
// ends with the context's cause. LENDGRAPH_CHAOS_ROUNDS sets the rounds
// per iterator (default 4); LENDGRAPH_CHAOS_SEED replays a run.
func TestIterators_RandomStopsUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: random faults on every iterator")
	}
	noLeaks(t)
	proxy := newFaultProxy(t)
	// Stalls longer than the bound below are cut by the attempt timeout,
	// later than the bound: a loop waiting for a stall would show.
	f := newIterFixture(t, func(srv *lendgraphtest.Server) *lendgraph.Client {
		return proxy.Client(srv, lendgraph.WithMaxRetries(8), lendgraph.WithAttemptTimeout(2500*time.Millisecond))
	})
	dir := t.TempDir() // after the fake wrote its files: the SDK's alone land here
	t.Setenv("TMPDIR", dir)
	rounds := envInt("LENDGRAPH_CHAOS_ROUNDS", 4)
	rng, faultRng := chaosRands(t)
	faults := []proxyFault{
		{Kind: pfStallBody, Delay: 4 * time.Second},
		{Kind: pfStallHead, Delay: 150 * time.Millisecond},
		{Kind: pfTrickle, Delay: 3 * time.Millisecond},
		{Kind: pfCutBody},
		{Kind: pfResetBefore},
	}
	const bound = 1200 * time.Millisecond // break, panic or cancel to return; slack for -race on a busy machine
	for _, ic := range f.cases(t) {
		t.Run(ic.name, func(t *testing.T) {
			for round := range rounds {
				fault := faults[rng.IntN(len(faults))]
				var mu sync.Mutex
				proxy.SetScript(func(*http.Request, int) proxyFault {
					mu.Lock()
					defer mu.Unlock()
					if faultRng.IntN(6) == 0 {
						return fault
					}
					return proxyFault{}
				})
				action := []string{"break", "panic", "cancel in the loop", "cancel at a random moment"}[rng.IntN(4)]
				at := 1 + rng.IntN(len(ic.want)-1)
				delay := time.Duration(rng.IntN(300)) * time.Millisecond
				desc := fmt.Sprintf("round %d: %s at row %d (or after %s) under %q", round, action, at, delay, fault.Kind)

				cause := fmt.Errorf("stop %d", round)
				ctx, cancel := context.WithCancelCause(context.Background())
				seq := ic.seq(ctx)
				got, wasStopped, took, last := rangeStopping(seq, action, at, delay, func() { cancel(cause) })
				if wasStopped && took > bound {
					t.Errorf("%s: returned %s after the stop", desc, took)
				}
				if !slices.Equal(got, ic.want[:min(len(got), len(ic.want))]) || len(got) > len(ic.want) {
					t.Fatalf("%s: rows are not the true rows in order:\n%s", desc, cmp.Diff(ic.want[:min(len(got), len(ic.want))], got))
				}
				switch {
				case strings.HasPrefix(action, "cancel") && wasStopped && len(got) < len(ic.want):
					if !errors.Is(last, context.Canceled) || !errors.Is(last, cause) {
						t.Fatalf("%s: ended with %v; want context.Canceled and the cause", desc, last)
					}
				case last != nil && !(strings.HasPrefix(action, "cancel") && wasStopped):
					t.Fatalf("%s: %v", desc, last)
				}
				// The same value again (its context still live for the
				// decoders; a new value for the others) yields every row.
				proxy.SetScript(nil)
				again := seq
				if strings.HasPrefix(action, "cancel") {
					again = ic.seq(context.Background())
				}
				all, err := rangeUntil(again, -1)
				cancel(nil)
				if err != nil || !slices.Equal(all, ic.want) {
					t.Fatalf("%s: the next range: %d of %d rows, %v", desc, len(all), len(ic.want), err)
				}
				if left, _ := os.ReadDir(dir); len(left) != 0 {
					t.Fatalf("%s: %d temporary files left", desc, len(left))
				}
			}
		})
	}
	t.Logf("faults applied: %v", proxy.Counts())
}
