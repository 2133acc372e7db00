package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpSpan is what the tests read of an exported span.
type otlpSpan struct {
	name, trace, id, parent string
	attrs                   map[string]string
}

// otlpReceiver is an OTLP/HTTP endpoint keeping the spans it receives.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []otlpSpan
	raw   bytes.Buffer // every request body, to look for secrets
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.raw.Write(b)
		if req.URL.Path == "/v1/traces" {
			var m coltrace.ExportTraceServiceRequest
			if err := proto.Unmarshal(b, &m); err != nil {
				t.Errorf("OTLP traces: %v", err)
			}
			for _, rs := range m.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					for _, s := range ss.Spans {
						sp := otlpSpan{name: s.Name, trace: hex.EncodeToString(s.TraceId), id: hex.EncodeToString(s.SpanId),
							parent: hex.EncodeToString(s.ParentSpanId), attrs: map[string]string{}}
						for _, kv := range s.Attributes {
							sp.attrs[kv.Key] = fmt.Sprint(kv.Value.GetValue())
						}
						r.spans = append(r.spans, sp)
					}
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(r.Close)
	return r
}

// TestTelemetry_ExportIsOneTrace runs `lendgraph export` with
// OTEL_EXPORTER_OTLP_ENDPOINT set: the spans arrive over OTLP/HTTP, all in
// one trace under the command's span, one span a shard, and no API key in
// what was sent.
func TestTelemetry_ExportIsOneTrace(t *testing.T) {
	rcv := newOTLPReceiver(t)
	c := newCLI(t)
	c.env = append(c.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL, "OTEL_METRIC_EXPORT_INTERVAL=100")
	dir := c.path("agents")
	r := c.run("export", "agents", "--by", "state", "--out", dir, "--yes", "--include-missing", "--concurrency", "3")
	wantCode(t, r, exitOK)
	m, err := manifestOf(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if strings.Contains(rcv.raw.String(), c.real) {
		t.Error("the API key was exported")
	}
	var root *otlpSpan
	traces := map[string]int{}
	shards := 0
	for i, s := range rcv.spans {
		traces[s.trace]++
		switch s.name {
		case "lendgraph export":
			root = &rcv.spans[i]
		case "lendgraph export.Shard":
			shards++
		}
	}
	if root == nil || len(traces) != 1 || shards != len(m.Shards) {
		t.Fatalf("root %v, %d traces, %d shard spans for %d shards (%d spans)", root, len(traces), shards, len(m.Shards), len(rcv.spans))
	}
	for _, s := range rcv.spans {
		if s.name == "lendgraph export.Shard" && s.parent != root.id {
			t.Errorf("shard span %v is not under the command's span", s.attrs)
		}
	}
}

// jaegerBinary is the Jaeger (v2) binary the end-to-end test runs: from
// $LENDGRAPH_JAEGER, else the one .ci/run builds into GOPATH/bin.
func jaegerBinary(t *testing.T) string {
	if p := os.Getenv("LENDGRAPH_JAEGER"); p != "" {
		return p
	}
	gopath, _ := exec.Command("go", "env", "GOPATH").Output()
	p := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "jaeger-"+jaegerVersion)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no Jaeger binary (%s): .ci/run builds it, or set LENDGRAPH_JAEGER", p)
	}
	return p
}

// jaegerVersion is the Jaeger release .ci/run builds (its v2 binary,
// module github.com/jaegertracing/jaeger).
const jaegerVersion = "v1.76.0"

// freePorts returns n distinct loopback ports nothing listens on now: each
// is held open until the last is found, so none is handed out twice.
func freePorts(t *testing.T, n int) []string {
	var ports []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, fmt.Sprint(l.Addr().(*net.TCPAddr).Port))
	}
	return ports
}

// startJaeger starts Jaeger with its OTLP receiver, query API and query
// gRPC on ports found free, and returns the receiver's port and the query
// API's URL once it answers. A port found free can be taken by another
// socket before Jaeger binds it (seen once: the query's gRPC, then on
// port 0, was given the port just found for the receiver), so a start
// that fails on a port in use is tried again, twice, on other ports.
func startJaeger(ctx context.Context, t *testing.T, bin string) (otlp, api string) {
	for attempt := 1; ; attempt++ {
		p := freePorts(t, 3)
		cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(jaegerConfig, "127.0.0.1:"+p[0], "127.0.0.1:"+p[1], "127.0.0.1:"+p[2])), 0o600); err != nil {
			t.Fatal(err)
		}
		var jlog bytes.Buffer
		j := exec.CommandContext(ctx, bin, "--config", cfg)
		j.Stdout, j.Stderr = &jlog, &jlog
		if err := j.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = j.Wait(); close(exited) }()
		api = "http://127.0.0.1:" + p[1]
		if up(api+"/api/services", exited) {
			t.Cleanup(func() { _ = j.Process.Kill(); <-exited })
			return p[0], api
		}
		_ = j.Process.Kill()
		<-exited // jlog is Jaeger's no more
		if attempt == 3 || !strings.Contains(jlog.String(), "address already in use") {
			t.Fatalf("Jaeger did not come up at %s:\n%s", api, jlog.String())
		}
		t.Logf("Jaeger found a port in use (attempt %d): trying other ports", attempt)
	}
}

// TestTelemetry_JaegerEndToEnd runs the tool against `lendgraph fake`
// (a process of its own) with its traces sent to a real Jaeger started by
// the test, then asks Jaeger's query API for the trace: a delivery with
// its submit, polls and download.
func TestTelemetry_JaegerEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: skipped with -short")
	}
	bin := jaegerBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	otlp, api := startJaeger(ctx, t, bin)

	// The fake, a process of its own, as a harness in any language runs it.
	baseURL, key := startFake(ctx, t)
	dir := t.TempDir()
	deliver := exec.CommandContext(ctx, binary, "deliver", "agents", "--format", "csv", "--limit", "50", "-o", filepath.Join(dir, "agents.csv"))
	deliver.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LENDGRAPH_BASE_URL=" + baseURL, "LENDGRAPH_API_KEY=" + key,
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:" + otlp, "OTEL_SERVICE_NAME=lendgraph-e2e"}
	if b, err := deliver.CombinedOutput(); err != nil {
		t.Fatalf("lendgraph deliver: %v\n%s", err, b)
	}

	var found struct {
		Data []struct {
			TraceID string `json:"traceID"`
			Spans   []struct {
				OperationName string `json:"operationName"`
				SpanID        string `json:"spanID"`
			} `json:"spans"`
		} `json:"data"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(api + "/api/traces?service=lendgraph-e2e&limit=5")
		if err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&found)
			resp.Body.Close()
		}
		if len(found.Data) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(found.Data) != 1 {
		t.Fatalf("Jaeger holds %d traces of the run, want 1", len(found.Data))
	}
	names := map[string]int{}
	for _, s := range found.Data[0].Spans {
		names[s.OperationName]++
	}
	for _, want := range []string{"lendgraph deliver", "lendgraph Agents.Deliver", "lendgraph DeliveryJob.Wait",
		"GET /v1/agents/bulk-delivery/{id}", "GET"} {
		if names[want] == 0 {
			t.Errorf("no span %q in the trace: %v", want, names)
		}
	}
}

// jaegerConfig runs Jaeger v2 with in-memory storage, an OTLP/HTTP
// receiver and the query API on the given addresses.
const jaegerConfig = `
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: []
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: %[2]s
    grpc:
      endpoint: %[3]s
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 1000
receivers:
  otlp:
    protocols:
      http:
        endpoint: %[1]s
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// up polls url until it answers (true), or until the process is done
// (exited closed) or a minute has passed (false).
func up(url string, exited <-chan struct{}) bool {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return true
		}
		select {
		case <-exited:
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false
}

// TestTelemetry_NoSecretOnStderr: the secrets of the OTLP configuration
// reach neither stderr nor stdout, whether the headers variable has the
// common typo, a malformed %-escape, or the collector answers 401 echoing
// the header it was sent; with --json every line on stderr is JSON.
func TestTelemetry_NoSecretOnStderr(t *testing.T) {
	const secret = "s3cr3t-otlp-token-0042"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "unauthorized: %q is not a valid credential (token %s)", r.Header.Get("Authorization"),
			strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}))
	t.Cleanup(echo.Close)
	c := newCLI(t)
	for _, tc := range []struct {
		name, headers string
		want          string // on stderr
	}{
		{"typo", "Authorization: Bearer " + secret, "OTEL_EXPORTER_OTLP_HEADERS: entry 1 of 1 has no"},
		{"bad escape", "X-Team=data,Authorization=Bearer%zz" + secret, "entry 2 of 2 (Authorization): the value has a malformed %-escape"},
		{"collector echoes the header", "Authorization=Bearer%20" + secret, "401 Unauthorized"},
		// A trailing comma: OpenTelemetry's own parser logs the empty
		// entry, through the tool's messages.
		{"OpenTelemetry's logger", "Authorization=Bearer%20" + secret + ",", "telemetry: parse headers"},
	} {
		for _, jsonOut := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s json=%v", tc.name, jsonOut), func(t *testing.T) {
				c.env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + echo.URL, "OTEL_EXPORTER_OTLP_HEADERS=" + tc.headers, "OTEL_METRIC_EXPORT_INTERVAL=50"}
				args := []string{"count", "agents"}
				if jsonOut {
					args = append([]string{"--json"}, args...)
				}
				r := c.run(args...)
				wantCode(t, r, 0)
				if n := strings.Count(r.stderr+r.stdout, secret); n != 0 {
					t.Fatalf("the secret reached the output %d times:\n%s", n, r.stderr)
				}
				if !strings.Contains(r.stderr, tc.want) {
					t.Errorf("stderr lacks %q:\n%s", tc.want, r.stderr)
				}
				lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
				t.Logf("%d lines on stderr:\n%s", len(lines), r.stderr)
				for _, line := range lines {
					if jsonOut && !json.Valid([]byte(line)) {
						t.Errorf("--json: stderr line %q is not JSON", line)
					}
				}
			})
		}
	}
}
