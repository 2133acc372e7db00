package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// The export workflow against Temporal's own dev server (`temporal server
// start-dev`, from the binary $LENDGRAPH_TEMPORAL names, else temporal on
// the PATH; .ci/run builds it with go install), the fake API in-process and
// a directory as the store (fileblob). The first submits answer 502 (a job
// that failed to launch: safe to retry, says the reference) more times than
// the SDK retries, so activities fail and Temporal retries them; the fake's
// ledger must still show each shard charged once.
func TestExportWorkflowOnTemporalDevServer(t *testing.T) {
	addr := startDevServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	srv := lendgraphtest.NewServer(t, lendgraphtest.WithRows("agents", 3000))
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 400})
	lg := srv.Client(lendgraph.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond))

	dest := t.TempDir()
	st, err := export.Open(ctx, dest)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	plan, err := export.NewPlan(ctx, lg.Agents, &lendgraph.DeliveryRequest{Format: lendgraph.FormatNDJSON},
		&export.PlanOptions{By: []string{"state"}, IncludeMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.Write(ctx, st); err != nil {
		t.Fatal(err)
	}
	if len(plan.Shards) < 8 {
		t.Fatalf("a plan of %d shards: want several", len(plan.Shards))
	}
	// The first 16 submits answer 502: the SDK makes 4 attempts a call, and
	// 4 activities run at once, so each of the first 4 fails as a whole.
	const refused = 16
	planning := srv.CountRequests("POST", "/v1/agents/bulk-delivery") // the ceiling's probe
	srv.InjectFault("POST", "/v1/agents/bulk-delivery", lendgraphtest.Fault{Status: 502, Body: `{"error":"job failed to launch"}`, Times: refused})

	tc, err := client.Dial(client.Options{HostPort: addr, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	w := newWorker(tc, lg)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	res, err := runExport(ctx, tc, ExportInput{Dest: dest, Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Temporal retried the activities that failed: the history records the
	// attempt that completed, with its number.
	retried := 0
	for it := tc.GetWorkflowHistory(ctx, workflowID(dest), "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT); it.HasNext(); {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && a.GetAttempt() > 1 {
			retried++
		}
	}
	if retried == 0 {
		t.Fatal("no activity was retried: the fault did not reach the workflow")
	}
	if res.Shards != len(plan.Shards) || res.Rows != plan.Total {
		t.Fatalf("the workflow committed %d shards and %d rows; the plan has %d and %d", res.Shards, res.Rows, len(plan.Shards), plan.Total)
	}
	if _, err := os.Stat(filepath.Join(dest, export.SuccessFile)); err != nil {
		t.Fatalf("no %s after the workflow: %v", export.SuccessFile, err)
	}
	// Counted at the fake: every shard charged once, the retried ones too.
	debits, credits := srv.Charged(lendgraphtest.DefaultOrg, "delivery")
	if debits != len(plan.Shards) || int64(credits) != plan.Total || credits != res.CreditsCharged {
		t.Fatalf("the ledger shows %d deliveries and %v credits (the workflow says %v); want %d and %d", debits, credits, res.CreditsCharged, len(plan.Shards), plan.Total)
	}
	if n := srv.CountRequests("POST", "/v1/agents/bulk-delivery") - planning; n != len(plan.Shards)+refused {
		t.Fatalf("%d submits for %d shards, %d of them refused", n, len(plan.Shards), refused)
	}
	seen := map[string]bool{}
	for a, err := range export.Rows[lendgraph.Agent](ctx, st) {
		if err != nil {
			t.Fatal(err)
		}
		if seen[a.ID] {
			t.Fatalf("id %s twice in the dataset", a.ID)
		}
		seen[a.ID] = true
	}
	if int64(len(seen)) != plan.Total {
		t.Fatalf("the dataset holds %d records; the fake has %d", len(seen), plan.Total)
	}
}

// startDevServer runs `temporal server start-dev` on loopback (in memory,
// no UI) for the test and returns its frontend address.
func startDevServer(t *testing.T) string {
	bin := os.Getenv("LENDGRAPH_TEMPORAL")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("temporal"); err != nil {
			t.Skip("no Temporal CLI: set LENDGRAPH_TEMPORAL or put temporal on the PATH (go install github.com/temporalio/cli/cmd/temporal@v1.5.1)")
		}
	}
	port, httpPort, metricsPort := freePort(t), freePort(t), freePort(t)
	cmd := exec.Command(bin, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", strconv.Itoa(port), "--http-port", strconv.Itoa(httpPort), "--metrics-port", strconv.Itoa(metricsPort),
		"--log-level", "error")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(time.Minute); ; {
		c, err := client.Dial(client.Options{HostPort: addr, Logger: quietLogger{}})
		if err == nil {
			_, err = c.CheckHealth(context.Background(), &client.CheckHealthRequest{})
			c.Close()
			if err == nil {
				return addr
			}
		}
		select {
		case <-exited:
			t.Fatalf("the dev server exited:\n%s", out.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dev server is not up after a minute: %v\n%s", err, out.String())
		}
	}
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// quietLogger drops the Temporal client's and worker's logs.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
