package lendgraph_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// envFakeProcess makes TestFakeProcess serve the fake: the benchmarks of a
// single call run the server in a process of their own, so that the
// client process's CPU time is the client's alone.
const envFakeProcess = "LENDGRAPH_BENCH_FAKE_PROCESS"

// TestFakeProcess is not a test: run by fakeProcess in a child process of
// the test binary, it serves lendgraphtest until its stdin closes, after
// printing "FAKE <base URL> <key>" on stdout.
func TestFakeProcess(t *testing.T) {
	if os.Getenv(envFakeProcess) == "" {
		t.Skip("the benchmarks' fake server process; runs only when they start it")
	}
	srv, err := lendgraphtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	fmt.Printf("FAKE %s %s\n", srv.URL, srv.DefaultCaller().Key)
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// fakeProcess starts the fake in a child process (the test binary running
// TestFakeProcess) and returns its base URL and key; the process ends
// with the benchmark.
func fakeProcess(b *testing.B) (base, key string) {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestFakeProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envFakeProcess+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { _, _ = io.Copy(io.Discard, out); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "FAKE" {
			return f[1], f[2]
		}
	}
	b.Fatalf("the fake process printed no address: %v", sc.Err())
	return "", ""
}

// handGet is the hand-written call a single Get is held to: net/http and
// encoding/json fetching one agent and decoding its typed fields.
func handGet(ctx context.Context, hc *http.Client, url, key string) (*handAgent, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("x-api-key", key)
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	var a handAgent
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// BenchmarkGetAgent holds c.Agents.Get to its floor, the hand-written
// net/http + encoding/json call (handGet), against the fake in another
// process over loopback. Hand and SDK report each one's allocations;
// Alternated makes one call of each per iteration, in turn, and reports
// the client process's CPU time of each (getrusage: user + system, every
// thread of the process, the garbage collector's included, which falls in
// proportion to what each allocates) and their ratio; NoDecode does the
// same without decoding the record.
func BenchmarkGetAgent(b *testing.B) {
	base, key := fakeProcess(b)
	ctx := context.Background()
	c, err := lendgraph.NewClient(lendgraph.WithBaseURL(base), lendgraph.WithAPIKey(key))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	page, err := c.Agents.List(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 1}})
	if err != nil || len(page.Data) != 1 {
		b.Fatal(err)
	}
	id := page.Data[0].ID
	url := base + "/v1/agents/" + id
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	hand := func() {
		a, err := handGet(ctx, hc, url, key)
		if err != nil || a.ID != id {
			b.Fatal(err)
		}
		sink += a.TransactionCount
	}
	sdk := func() {
		a, err := c.Agents.Get(ctx, id)
		if err != nil || a.ID != id || a.Extra.Len() == 0 {
			b.Fatal(err)
		}
		sink += a.TransactionCount
	}
	b.Run("Hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hand()
		}
	})
	b.Run("SDK", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sdk()
		}
	})
	b.Run("Alternated", func(b *testing.B) { alternated(b, hand, sdk) })
	// NoDecode is Alternated with the record read but not decoded, on
	// both sides (the SDK's Client.Do with no destination): what is left
	// is the request path's own cost against net/http's.
	b.Run("NoDecode", func(b *testing.B) {
		alternated(b, func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("x-api-key", key)
			req.Header.Set("Accept", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || len(body) == 0 {
				b.Fatal(resp.StatusCode, err)
			}
		}, func() {
			if err := c.Do(ctx, http.MethodGet, "/v1/agents/"+id, nil, nil); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// alternated makes one call of hand and one of sdk per iteration, in
// turn, and reports the process's CPU time (getrusage) of each and their
// ratio.
func alternated(b *testing.B, hand, sdk func()) {
	var handCPU, sdkCPU time.Duration
	i := 0
	for b.Loop() {
		t0 := cpuTime()
		if i%2 == 0 {
			hand()
			t1 := cpuTime()
			sdk()
			handCPU += t1 - t0
			sdkCPU += cpuTime() - t1
		} else {
			sdk()
			t1 := cpuTime()
			hand()
			sdkCPU += t1 - t0
			handCPU += cpuTime() - t1
		}
		i++
	}
	b.ReportMetric(float64(handCPU.Nanoseconds())/1e3/float64(b.N), "hand-cpu-us/op")
	b.ReportMetric(float64(sdkCPU.Nanoseconds())/1e3/float64(b.N), "sdk-cpu-us/op")
	if handCPU > 0 {
		b.ReportMetric(float64(sdkCPU)/float64(handCPU), "sdk/hand")
	}
}

// cannedTransport answers every request with the same agent, without a
// network: what is left of a call is the client's own work.
type cannedTransport struct{ body []byte }

func (t cannedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"req_1"}, "Date": {"Sun, 29 Nov 2026 00:47:20 GMT"}},
		Body:          io.NopCloser(bytes.NewReader(t.body)),
		ContentLength: int64(len(t.body)), Request: req}, nil
}

const cannedAgent = `{"brokerage":"Keller Williams","city":"Milwaukee","email":"david.smith1@example.com","firstName":"David","fullName":"David Smith","id":"agt_0000001","isTeamLead":true,"lastName":"Smith","lastTransactionDate":"2026-08-23","licenseNumber":"WI31731132","office":{"city":"Milwaukee","name":"eXp Realty Milwaukee","state":"WI"},"phone":"+16235556009","recentTransactions":[{"date":"2025-04-10","price":974064,"propertyId":"prop_0000007"},{"date":"2026-01-13","price":588934,"propertyId":"prop_0000008"},{"date":"2026-06-01","price":1410178,"propertyId":"prop_0000009"}],"state":"WI","tags":["investors"],"transactionCount":23,"volume":8613926.71,"zip":"82529"}`

// BenchmarkCallOverhead is a single Get with no network under it: the
// same canned answer for the hand-written call and for the SDK, so the
// difference is the client's own work per call (request building, the
// retry loop, the per-attempt transport, decoding).
func BenchmarkCallOverhead(b *testing.B) {
	ctx := context.Background()
	hc := &http.Client{Transport: cannedTransport{body: []byte(cannedAgent)}}
	const key = "lg_test_0123456789abcdef0123456789abcdef"
	b.Run("Hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			a, err := handGet(ctx, hc, "http://127.0.0.1:1/v1/agents/agt_0000001", key)
			if err != nil || a.ID != "agt_0000001" {
				b.Fatal(err)
			}
		}
	})
	b.Run("SDK", func(b *testing.B) {
		c, err := lendgraph.NewClient(lendgraph.WithBaseURL("http://127.0.0.1:1"), lendgraph.WithAPIKey(key), lendgraph.WithHTTPClient(hc))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			a, err := c.Agents.Get(ctx, "agt_0000001")
			if err != nil || a.ID != "agt_0000001" {
				b.Fatal(err)
			}
		}
	})
}
