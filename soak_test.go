package lendgraph_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// TestReliability_Soak runs idempotent reads (a list read to its end, Get, a search
// host query, market movement) from many goroutines for a while, through a
// fault proxy that faults about a tenth of all attempts (stalls included),
// and counts the calls that fail. It is skipped unless LENDGRAPH_SOAK
// names a duration:
//
//	LENDGRAPH_SOAK=60s go test -run TestReliability_Soak -v .
//
// LENDGRAPH_SOAK_FAULTS sets the share of faulted attempts (default 0.10),
// LENDGRAPH_SOAK_WORKERS the goroutines (default 16), and
// LENDGRAPH_SOAK_TIMEOUT how a stalled attempt is cut: "sdk" (default:
// WithAttemptTimeout(1s)), "client" (http.Client.Timeout of 1s) or "none"
// (only each call's 60 s context). With "sdk" and "client" at most 1% of
// the calls may fail.
func TestReliability_Soak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("LENDGRAPH_SOAK"))
	if err != nil || testing.Short() {
		t.Skip("set LENDGRAPH_SOAK=60s to run the soak")
	}
	share := 0.10
	if v, err := strconv.ParseFloat(os.Getenv("LENDGRAPH_SOAK_FAULTS"), 64); err == nil {
		share = v
	}
	workers := envInt("LENDGRAPH_SOAK_WORKERS", 16)
	mode := os.Getenv("LENDGRAPH_SOAK_TIMEOUT")
	if mode == "" {
		mode = "sdk"
	}

	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(2000), lendgraphtest.WithRows("agents", 600))
	proxy := newFaultProxy(t)
	// The fault mix: a weight for each, 10 in all.
	mix := []struct {
		f proxyFault
		w float64
	}{
		{proxyFault{Kind: pfStallHead, Delay: 3 * time.Second}, 2},
		{proxyFault{Kind: pfStallBody, Delay: 3 * time.Second}, 1.5},
		{proxyFault{Kind: pfResetBefore}, 1},
		{proxyFault{Kind: pfResetAfter}, 1},
		{proxyFault{Kind: pfCutBody}, 1.5},
		{proxyFault{Kind: pf503}, 1},
		{proxyFault{Kind: pf502After}, 0.5},
		{proxyFault{Kind: pf429}, 1},
		{proxyFault{Kind: pfTrickle, Delay: 5 * time.Millisecond}, 0.5},
	}
	var rngMu sync.Mutex
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var attempts int
	proxy.SetScript(func(*http.Request, int) proxyFault {
		rngMu.Lock()
		defer rngMu.Unlock()
		attempts++
		if rng.Float64() >= share {
			return proxyFault{}
		}
		x := rng.Float64() * 10
		for _, m := range mix {
			if x < m.w {
				return m.f
			}
			x -= m.w
		}
		return mix[0].f
	})

	opts := []lendgraph.Option{lendgraph.WithRetryBackoff(50*time.Millisecond, time.Second)}
	switch mode {
	case "sdk":
		opts = append(opts, lendgraph.WithAttemptTimeout(time.Second))
	case "client":
		tr := proxy.Transport()
		t.Cleanup(tr.CloseIdleConnections)
		opts = append(opts, lendgraph.WithHTTPClient(&http.Client{Transport: tr, Timeout: time.Second}))
	}
	c := proxy.Client(srv, opts...)
	agents := srv.Dataset().Len("agents")
	states := []string{"TX", "CA", "FL", "NY", "WA"}
	type op struct {
		name string
		do   func(ctx context.Context, r *rand.Rand) error
	}
	ops := []op{
		{"list to the end", func(ctx context.Context, _ *rand.Rand) error {
			n := 0
			for _, err := range c.Agents.All(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100}}) {
				if err != nil {
					return err
				}
				n++
			}
			if n != agents {
				return fmt.Errorf("listed %d of %d", n, agents)
			}
			return nil
		}},
		{"Get", func(ctx context.Context, r *rand.Rand) error {
			id := srv.Dataset().ID("agents", r.IntN(agents))
			a, err := c.Agents.Get(ctx, id)
			if err == nil && a.ID != id {
				return fmt.Errorf("asked %s, got %s", id, a.ID)
			}
			return err
		}},
		{"search host", func(ctx context.Context, r *rand.Rand) error {
			_, err := c.Search.Host().Search(ctx, lendgraph.IndexOriginators, &lendgraph.HostSearchRequest{Q: []string{"jo", "sm", "ma", "da"}[r.IntN(4)], Limit: 5})
			return err
		}},
		{"market movement", func(ctx context.Context, r *rand.Rand) error {
			_, err := c.Market.MostGained(ctx, &lendgraph.MostGainedRequest{State: states[r.IntN(len(states))]})
			return err
		}},
	}
	type tally struct {
		calls, failed int
		samples       map[string]int
	}
	var mu sync.Mutex
	tallies := map[string]*tally{}
	for _, o := range ops {
		tallies[o.name] = &tally{samples: map[string]int{}}
	}
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 2))
			for time.Now().Before(stop) {
				o := ops[r.IntN(len(ops))]
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				err := o.do(ctx, r)
				cancel()
				mu.Lock()
				tl := tallies[o.name]
				tl.calls++
				if err != nil {
					tl.failed++
					tl.samples[soakKind(err)]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()

	calls, failed := 0, 0
	names := make([]string, 0, len(tallies))
	for n := range tallies {
		names = append(names, n)
	}
	sort.Strings(names)
	var report strings.Builder
	fmt.Fprintf(&report, "soak: %s, %d workers, %.0f%% of attempts faulted, stalls cut by %q\n", d, workers, share*100, mode)
	for _, n := range names {
		tl := tallies[n]
		calls += tl.calls
		failed += tl.failed
		fmt.Fprintf(&report, "  %-16s %6d calls, %4d failed (%.2f%%) %v\n", n, tl.calls, tl.failed, pct(tl.failed, tl.calls), tl.samples)
	}
	rngMu.Lock()
	fmt.Fprintf(&report, "  all              %6d calls, %4d failed (%.2f%%); %d attempts, faults %v\n", calls, failed, pct(failed, calls), attempts, proxy.Counts())
	rngMu.Unlock()
	t.Log(report.String())
	if out := os.Getenv("LENDGRAPH_SOAK_OUT"); out != "" {
		_ = os.WriteFile(out, []byte(report.String()), 0o644)
	}
	if mode != "none" && pct(failed, calls) > 1 {
		t.Errorf("%.2f%% of idempotent reads failed, want at most 1%%", pct(failed, calls))
	}
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// soakKind names an error for the soak's tally.
func soakKind(err error) string {
	var (
		ae *lendgraph.APIError
		te *lendgraph.TransportError
		de *lendgraph.DecodeError
		se *lendgraph.SearchHostError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	case errors.As(err, &se):
		return fmt.Sprintf("search host %d", se.StatusCode)
	case errors.As(err, &ae):
		return fmt.Sprintf("API %d", ae.StatusCode)
	case errors.As(err, &de):
		return "decode"
	case errors.As(err, &te):
		return "transport"
	}
	s := err.Error()
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}
