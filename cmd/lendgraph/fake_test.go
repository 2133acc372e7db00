package main

import (
	"bufio"
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// TestFakeHarnessScript runs the bash + curl harness against the binary:
// a test suite in another language drives the fake with nothing but HTTP.
func TestFakeHarnessScript(t *testing.T) {
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "testdata/fake_harness.sh")
	cmd.Env = append(cmd.Environ(), "LENDGRAPH_BIN="+binary)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(string(out), "PASS\n") {
		t.Fatalf("fake_harness.sh: %v\n%s", err, out)
	}
}

// TestFakeCommandLine: the one line on stdout carries the base URL and the
// key (and the search host and control URL) as NAME=VALUE pairs a program
// splits on spaces, and the flags shape the fake.
func TestFakeCommandLine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "fake", "--addr", "127.0.0.1:0", "--rows", "500", "--rows", "loans=40",
		"--seed", "3", "--credits", "77", "--entitle", "agents=100:id,state", "--job-rate", "delivery=500", "--link-ttl", "1m",
		"--fault", `{"method":"GET","path":"/v1/agents/{id}","status":503}`)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, kv := range strings.Fields(line) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" || strings.ContainsAny(v, `"'$`) {
			t.Fatalf("%q in %q is not NAME=VALUE", kv, line)
		}
		vars[k] = v
	}
	base, key := vars["LENDGRAPH_BASE_URL"], vars["LENDGRAPH_API_KEY"]
	if !strings.HasPrefix(base, "http://127.0.0.1:") || key == "" || vars["LENDGRAPH_FAKE_CONTROL_URL"] != base+"/_fake" ||
		vars["LENDGRAPH_SEARCH_HOST"] == "" || vars["LENDGRAPH_FAKE_OTHER_API_KEY"] == "" {
		t.Fatalf("line %q", line)
	}
	c, err := lendgraph.NewClient(lendgraph.WithBaseURL(base), lendgraph.WithAPIKey(key), lendgraph.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := c.Agents.List(ctx, nil); err != nil || p.Total != 500 {
		t.Fatalf("agents: %v %v", p, err)
	}
	if p, err := c.Loans.List(ctx, nil); err != nil || p.Total != 40 {
		t.Fatalf("loans: %v %v", p, err)
	}
	// The fault given as a flag fires once.
	if _, err := c.Agents.Get(ctx, "agt_0000001"); !errors.Is(err, lendgraph.ErrUnavailable) && !strings.Contains(err.Error(), "503") {
		t.Fatalf("armed fault: %v", err)
	}
	// --entitle: a ceiling of 100 rows for agents, 77 credits.
	var max *lendgraph.MaxRowsError
	if _, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV}); !errors.As(err, &max) || max.MaxRows != 100 {
		t.Fatalf("above the ceiling: %v", err)
	}
	var credits *lendgraph.InsufficientCreditsError
	if _, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 90}); !errors.As(err, &credits) || credits.Balance != 77 {
		t.Fatalf("above the balance: %v", err)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("fake did not stop cleanly on SIGINT: %v", err)
	}
}

func TestFakeCommandRefusesBadSettings(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct{ args []string }{
		{[]string{"--rows", "lots"}},
		{[]string{"--rows", "planets=5"}},
		{[]string{"--entitle", "agents"}},
		{[]string{"--entitle", "agents=10:fullname"}},
		{[]string{"--job-rate", "delivery"}},
		{[]string{"--link-ttl", "soon"}},
		{[]string{"--fault", `{"path":"/v1/agents","colour":"red"}`}},
		{[]string{"--fault", `{"method":"get","path":"/v1/agents"}`}},
		{[]string{"--config", "missing.json"}},
	} {
		r := c.run(append([]string{"fake", "--addr", "127.0.0.1:0"}, tc.args...)...)
		if r.code != exitUsage || r.stdout != "" {
			t.Errorf("fake %s: exit %d, stdout %q\n%s", strings.Join(tc.args, " "), r.code, r.stdout, r.stderr)
		}
	}
}

// TestFakeRemoteAddr: an --addr other machines can reach is refused
// without --allow-remote; with it the fake warns, and advertises an
// address a client can dial, never http://[::]:PORT or 0.0.0.0.
func TestFakeRemoteAddr(t *testing.T) {
	c := newCLI(t)
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0", "192.0.2.1:0", "example.com:0"} {
		r := c.run("fake", "--addr", addr)
		if r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, "--allow-remote") {
			t.Errorf("fake --addr %s: exit %d, stdout %q\n%s", addr, r.code, r.stdout, r.stderr)
		}
	}
	for _, addr := range []string{":0", "0.0.0.0:0"} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, binary, "fake", "--addr", addr, "--allow-remote", "--rows", "10")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
		cancel()
		if err != nil || !strings.HasPrefix(line, "LENDGRAPH_BASE_URL=http://127.0.0.1:") || strings.Contains(line, "[::]") || strings.Contains(line, "0.0.0.0") {
			t.Errorf("fake --addr %s --allow-remote: line %q (%v)", addr, line, err)
		}
		if !strings.Contains(stderr.String(), "warning: --addr "+addr+" --allow-remote") {
			t.Errorf("fake --addr %s --allow-remote: no warning on stderr:\n%s", addr, stderr.String())
		}
	}
}
