package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/internal/miniotest"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	"gocloud.dev/blob"
)

// TestExportChaosIntoMinIO runs an export of about 136 shards the way it
// fails in production: eight worker processes (standing in for machines)
// take shards of one plan in MinIO from a queue, as an orchestrator's tasks
// would; workers are SIGKILLed at random moments (mid-submit, mid-download,
// mid-upload); MinIO is killed and restarted once; signed links live only
// 1.5 s and downloads crawl at 24 KB/s; twice, a second worker is
// started for a shard that is running. A failed task is retried, as an
// orchestrator does. Then the dataset is committed and checked at the
// fake and in the store: every record exactly once (read back by
// export.Rows and, copied down, by DuckDB), no shard submitted twice
// outside the documented window (a kill between a submit and the record
// of its job id, which leaves the shard uncertain until
// --resubmit-uncertain), and _SUCCESS only at the end.
//
// The fault schedule (which tasks are killed and when, the duplicates, the
// restart) comes from a seed that the test logs; LENDGRAPH_CHAOS_SEED=N
// replays it. The processes' timing is the machine's, so a replay repeats
// the schedule, not every interleaving.
func TestExportChaosIntoMinIO(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: skipped with -short")
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("LENDGRAPH_CHAOS_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("LENDGRAPH_CHAOS_SEED=%q: %v", v, err)
		}
	}
	t.Logf("fault schedule from LENDGRAPH_CHAOS_SEED=%d", seed)
	duck := duckdbNode(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	minio := miniotest.StartServer(t)
	store := minio.Store
	c := exportCLI(t, 5000, 200, lendgraphtest.WithLinkTTL(1500*time.Millisecond))
	c.env = awsEnv(store)
	setAWSEnv(t, store)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	url := "s3://" + store.Bucket + "/exports/agents?use_path_style=true"
	b := rawBucket(t, url)
	createBucket(ctx, t, b, store.Bucket)

	r := c.run("export", "plan", "agents", "--by", "state,city", "--format", "parquet", "--out", url, "--json")
	wantCode(t, r, 0)
	var plan export.Plan
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, r.stdout)
	}
	n := len(plan.Shards)
	if n < 50 {
		t.Fatalf("a plan of %d shards; the harness wants at least 50", n)
	}
	submitsBefore := len(submitBodies(c.srv))
	// Slow storage, so that kills land mid-download and mid-upload; the
	// links' 1.5 s lifetime means a task that takes over a job needs a
	// fresh one. (How often a link expired under a task is not counted.)
	c.srv.InjectFault("GET", "/objects/*", lendgraphtest.Fault{Kind: lendgraphtest.Throttle, Rate: 24 << 10, Times: -1})

	// The schedule.
	const workers, maxAttempts = 8, 12
	restartAfter := n/4 + rng.IntN(n/4) // MinIO restarts once this many shards are done
	dupAt := map[int]bool{rng.IntN(n / 2): true, n/2 + rng.IntN(n/2): true}

	type exit struct {
		shard, attempt int
		killed         bool
		code           int
		stderr         string
	}
	exits := make(chan exit)
	resubmits := make([]int, n) // tasks started with --resubmit-uncertain, by shard
	running := map[int]int{}    // processes running, by shard
	inFlight, launched := 0, 0  // processes running; processes started
	start := func(shard, attempt int, resubmit bool) {
		// A claim with no job id for 3 s is a dead task's (the default, two
		// minutes, would leave the harness waiting).
		args := []string{"export", "run", "--plan", url, "--shard", strconv.Itoa(shard), "--stale-claim-after", "3s"}
		if resubmit {
			args = append(args, "--resubmit-uncertain")
			resubmits[shard]++
		}
		cmd := c.command(ctx, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		running[shard]++
		inFlight++
		launched++
		var kill *time.Timer
		if rng.Float64() < 0.3 {
			kill = time.AfterFunc(time.Duration(rng.Int64N(int64(2500*time.Millisecond))), func() { _ = cmd.Process.Kill() })
		}
		go func() {
			err := cmd.Wait()
			if kill != nil {
				kill.Stop()
			}
			e := exit{shard: shard, attempt: attempt, stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				e.killed = true
			}
			_ = err // the exit code and the signal say it all
			exits <- e
		}()
	}

	queue := make([]int, n)
	for i := range queue {
		queue[i] = i
	}
	attempts := make([]int, n)
	done := make([]bool, n)
	uncertain := map[int]bool{} // shards the harness ran with --resubmit-uncertain
	ndone, kills, dups, tempfails, restarted := 0, 0, 0, 0, false
	later := make(chan int, n*maxAttempts) // busy shards, back in the queue after a while
	for ndone < n {
		for inFlight < workers && len(queue) > 0 {
			shard := queue[0]
			queue = queue[1:]
			attempts[shard]++
			if attempts[shard] > maxAttempts {
				t.Fatalf("shard %d (%s) failed %d times", shard, plan.Shards[shard].Name, maxAttempts)
			}
			start(shard, attempts[shard], uncertain[shard])
			if dupAt[launched] { // an orchestrator's retry while the first still runs
				start(shard, attempts[shard], uncertain[shard])
				dups++
			}
		}
		var e exit
		select {
		case e = <-exits:
		case shard := <-later:
			if !done[shard] && running[shard] == 0 && !slices.Contains(queue, shard) {
				queue = append(queue, shard)
			}
			continue
		case <-ctx.Done():
			t.Fatalf("the workers did not finish: %d of %d shards done", ndone, n)
		}
		running[e.shard]--
		inFlight--
		switch {
		case e.code == 0:
			if !done[e.shard] {
				done[e.shard] = true
				ndone++
			}
		case e.killed:
			kills++
		case e.code == exitBusy:
			// Another task is submitting the shard: retried later, as an
			// orchestrator's backoff does, and not counted as a failure.
			tempfails++
			attempts[e.shard]--
			time.AfterFunc(300*time.Millisecond, func() { later <- e.shard })
			continue
		case strings.Contains(e.stderr, "--resubmit-uncertain"):
			// The documented window: killed between the submit and the
			// record of its job id. The operator decides to submit again.
			uncertain[e.shard] = true
		default:
			t.Logf("shard %d attempt %d exited %d: %s", e.shard, e.attempt, e.code, lastLine(e.stderr))
		}
		if !done[e.shard] && running[e.shard] == 0 && !slices.Contains(queue, e.shard) {
			queue = append(queue, e.shard) // the orchestrator retries the task
		}
		if !restarted && ndone >= restartAfter {
			restarted = true
			minio.Restart()
			t.Logf("MinIO restarted with %d of %d shards done", ndone, n)
		}
	}
	// Drain the duplicates still running.
	for ; inFlight > 0; inFlight-- {
		select {
		case <-exits:
		case <-ctx.Done():
			t.Fatalf("%d worker processes did not end", inFlight)
		}
	}
	t.Logf("%d shards, %d tasks (%d started beside a running one), %d killed, %d told another task was submitting (exit 75), %d shards submitted again by the operator (uncertain)", n, launched, dups, kills, tempfails, len(uncertain))
	if dups == 0 {
		t.Fatal("no shard ran twice at once")
	}
	if exists, _ := b.Exists(ctx, export.SuccessFile); exists {
		t.Fatal("_SUCCESS before the commit")
	}

	r = c.run("export", "commit", "--plan", url, "--json")
	wantCode(t, r, 0)
	var committed commitResult
	if err := json.Unmarshal([]byte(r.stdout), &committed); err != nil {
		t.Fatalf("commit --json: %v\n%s", err, r.stdout)
	}
	if exists, _ := b.Exists(ctx, export.SuccessFile); !exists {
		t.Fatal("no _SUCCESS after the commit")
	}

	// At the fake: no shard submitted twice outside the window, that is
	// more often than once plus once a task the operator started with
	// --resubmit-uncertain.
	shardOf := map[string]int{}
	for i, sh := range plan.Shards {
		shardOf[canonical(t, sh.Request)] = i
	}
	submits := make([]int, n)
	for _, body := range submitBodies(c.srv)[submitsBefore:] {
		var req lendgraph.DeliveryRequest
		if err := json.Unmarshal([]byte(body), &req); err != nil {
			t.Fatalf("a submit of %s: %v", body, err)
		}
		i, ok := shardOf[canonical(t, req)]
		if !ok {
			t.Fatalf("a submit of no shard of the plan: %s", body)
		}
		submits[i]++
	}
	total := 0
	for i, k := range submits {
		total += k
		if k == 0 || k > 1+resubmits[i] {
			t.Errorf("shard %s: submitted %d times, %d of its tasks were told to resubmit", plan.Shards[i].Name, k, resubmits[i])
		}
	}
	// Every job the service started was charged once when it completed.
	debits, credits := c.srv.Charged(lendgraphtest.DefaultOrg, "delivery")
	if debits < n || debits > total || int64(credits) < plan.Total {
		t.Fatalf("the ledger shows %d deliveries and %v credits for %d shards of %d rows (%d submits)", debits, credits, n, plan.Total, total)
	}
	// The commit's account covers the ledger: what was charged for the
	// landed files, and what submits whose answer was lost may have.
	if committed.ChargedRows != plan.Total || float64(committed.ChargedRows+committed.UncertainRows) < credits {
		t.Fatalf("commit says %d rows charged and up to %d more; the ledger shows %v credits (a credit a row)", committed.ChargedRows, committed.UncertainRows, credits)
	}

	// In the store: every record exactly once.
	want := map[string]bool{}
	for a, err := range c.srv.Client().Agents.All(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100}}) {
		if err != nil {
			t.Fatal(err)
		}
		want[a.ID] = true
	}
	got := map[string]int{}
	for a, err := range export.Rows[lendgraph.Agent](ctx, openExport(t, url)) {
		if err != nil {
			t.Fatal(err)
		}
		got[a.ID]++
	}
	checkOnce(t, "export.Rows", got, want)

	// Copied down and read by DuckDB.
	{
		dir := copyDown(ctx, t, b)
		script := filepath.Join(t.TempDir(), "read.cjs")
		if err := os.WriteFile(script, []byte(duckdbScript), 0o644); err != nil {
			t.Fatal(err)
		}
		raw, err := exec.CommandContext(ctx, "node", script, duck, dir).Output()
		if err != nil {
			t.Fatalf("DuckDB: %v\n%s", err, stderrOf(err))
		}
		var read struct {
			IDs []string `json:"ids"`
		}
		if err := json.Unmarshal(raw, &read); err != nil {
			t.Fatalf("DuckDB printed %.300s: %v", raw, err)
		}
		seen := map[string]int{}
		for _, id := range read.IDs {
			seen[id]++
		}
		checkOnce(t, "DuckDB", seen, want)
	}
}

// submitBodies are the bodies of the agents' bulk-delivery submits the fake
// received, oldest first: one shard's submits have the same body.
func submitBodies(srv *lendgraphtest.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		if r.Listener == "api" && r.Method == "POST" && r.Path == "/v1/agents/bulk-delivery" {
			out = append(out, string(r.Body))
		}
	}
	return out
}

// createBucket creates the bucket b is in, through the S3 client under it.
func createBucket(ctx context.Context, t testing.TB, b *blob.Bucket, name string) {
	t.Helper()
	var client *s3.Client
	if !b.As(&client) {
		t.Fatal("the bucket is not an S3 bucket")
	}
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("creating bucket %s: %v", name, err)
	}
}

// copyDown copies every object of b into a new directory, keeping the keys
// as paths.
func copyDown(ctx context.Context, t *testing.T, b *blob.Bucket) string {
	t.Helper()
	dir := t.TempDir()
	it := b.List(nil)
	for {
		obj, err := it.Next(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		data, err := b.ReadAll(ctx, obj.Key)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(obj.Key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkOnce fails the test unless got holds every id of want exactly once
// and nothing else.
func checkOnce(t *testing.T, reader string, got map[string]int, want map[string]bool) {
	t.Helper()
	bad := 0
	for id, k := range got {
		if k != 1 || !want[id] {
			bad++
			if bad <= 5 {
				t.Errorf("%s: id %s read %d times; the fake lists it: %v", reader, id, k, want[id])
			}
		}
	}
	for id := range want {
		if got[id] == 0 {
			bad++
			if bad <= 5 {
				t.Errorf("%s: id %s is missing", reader, id)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d ids wrong of %d", reader, bad, len(want))
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// canonical is a delivery request as JSON, to match a submit's body with
// its shard.
func canonical(t *testing.T, r lendgraph.DeliveryRequest) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
