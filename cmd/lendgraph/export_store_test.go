package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/internal/miniotest"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// awsEnv is the environment in which the tool (and s3blob) reach store:
// its keys and endpoint, and no config file of the machine's.
func awsEnv(store lendgraphtest.S3Store) []string {
	return []string{"AWS_ACCESS_KEY_ID=" + store.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + store.SecretAccessKey,
		"AWS_REGION=us-east-1", "AWS_ENDPOINT_URL_S3=" + store.Endpoint, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}
}

// setAWSEnv sets store's environment in this process too, for
// export.Open and gocloud, until the test ends.
func setAWSEnv(t testing.TB, store lendgraphtest.S3Store) {
	for _, kv := range awsEnv(store) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// TestExportThreeStepsIntoMinIO runs an export as an orchestrator would,
// into MinIO: export plan writes URL/_plan.json, one export run a shard
// (by JOB_COMPLETION_INDEX, by index, by name), export commit. The
// credentials and endpoint come from the AWS environment variables and
// never show in any output.
func TestExportThreeStepsIntoMinIO(t *testing.T) {
	store := miniotest.Start(t)
	c := exportCLI(t, 900, 300, lendgraphtest.WithS3Store(store))
	base := awsEnv(store)
	c.env = base
	url := "s3://" + store.Bucket + "/exports/agents?use_path_style=true"
	run := func(code int, args ...string) result {
		t.Helper()
		r := c.run(args...)
		wantCode(t, r, code)
		if strings.Contains(r.stdout+r.stderr, store.SecretAccessKey) {
			t.Errorf("the store's secret shows in the output of %v", args)
		}
		return r
	}

	// Where no plan is, a usage error; a store that refuses the caller,
	// an error of the store (exit 1), not a usage error.
	r := run(2, "export", "run", "--plan", "s3://"+store.Bucket+"/nothing-here?use_path_style=true", "--shard", "0")
	if !strings.Contains(r.stderr, "--plan") {
		t.Errorf("no plan at the URL: %s", r.stderr)
	}
	c.env = append(slices.Clone(base), "AWS_SECRET_ACCESS_KEY=not-the-secret")
	r = run(1, "export", "run", "--plan", url, "--shard", "0")
	if strings.Contains(r.stderr, "--help") || strings.Contains(r.stderr, "not-the-secret") {
		t.Errorf("wrong credentials: %s", r.stderr)
	}
	c.env = base

	run(0, "export", "plan", "agents", "--by", "state", "--out", url)
	if jobsRun(c.srv) != 0 {
		t.Fatalf("export plan ran %d jobs", jobsRun(c.srv))
	}
	r = run(2, "export", "run", "--plan", url)
	if !strings.Contains(r.stderr, "JOB_COMPLETION_INDEX") {
		t.Errorf("a run without --shard or JOB_COMPLETION_INDEX: %s", r.stderr)
	}
	r = run(2, "export", "run", "--plan", url, "--shard", "9999")
	if !strings.Contains(r.stderr, "indexed 0 to") {
		t.Errorf("an index past the plan: %s", r.stderr)
	}
	r = run(1, "export", "commit", "--plan", url)
	if !strings.Contains(r.stderr, "not landed") {
		t.Errorf("a commit before the shards ran: %s", r.stderr)
	}
	if r = run(1, "rows", url); !strings.Contains(r.stderr, "not committed") {
		t.Errorf("rows of an export not committed: %s", r.stderr)
	}

	c.env = append(base, "JOB_COMPLETION_INDEX=0")
	run(0, "export", "run", "--plan", url)
	c.env = base
	run(0, "export", "run", "--plan", url, "--shard", "1")
	run(0, "export", "run", "--plan", url, "--shard", "state=CA")
	// The same shard again, as an orchestrator's retry: nothing submitted.
	before := jobsRun(c.srv)
	run(0, "export", "run", "--plan", url, "--shard", "1")
	if n := jobsRun(c.srv); n != before {
		t.Errorf("running a landed shard again started %d jobs", n-before)
	}

	// The rest in one task.
	whole := c.run("export", "plan", "agents", "--by", "state", "--out", url, "--json")
	wantCode(t, whole, 0)
	var p export.Plan
	if err := json.Unmarshal([]byte(whole.stdout), &p); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, whole.stdout)
	}
	args := []string{"export", "run", "--plan", url}
	for i := 2; i < len(p.Shards); i++ {
		args = append(args, "--shard", fmt.Sprint(i))
	}
	run(0, args...)
	r = run(0, "export", "commit", "--plan", url, "--json")
	var res commitResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("commit --json: %v\n%s", err, r.stdout)
	}
	if !res.Complete || res.LandedRows != 900 || res.Shards != len(p.Shards) || res.DuplicateIDs != 0 || strings.Contains(res.Out, "?") {
		t.Errorf("commit: %+v", res)
	}
	if n := jobsRun(c.srv); n != len(p.Shards) {
		t.Errorf("%d delivery jobs for %d shards", n, len(p.Shards))
	}
	// lendgraph rows reads the dataset straight from the store.
	r = run(0, "rows", url, "--fields", "id")
	ids := map[string]bool{}
	for line := range strings.Lines(r.stdout) {
		ids[line] = true
	}
	if len(ids) != 900 || strings.Count(r.stdout, "\n") != 900 {
		t.Errorf("rows %s: %d lines, %d distinct", url, strings.Count(r.stdout, "\n"), len(ids))
	}
}

// TestExportOneCommandIntoAFileURL: today's one-command form with a file://
// destination lands the bucket layout and commits it.
func TestExportOneCommandIntoAFileURL(t *testing.T) {
	c := exportCLI(t, 600, 300)
	dir := c.path("bucket")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := c.run("export", "agents", "--by", "state", "--format", "csv", "--out", "file://"+dir, "--yes")
	wantCode(t, r, 0)
	for _, name := range []string{export.SuccessFile, export.ManifestFile, export.PlanFile, "state=CA/part-00000.csv"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestExportRunBusyWhileAnotherTaskSubmits: a task started for a shard
// whose submit another task is still waiting on is told to come back
// later (exit 75), not that an answer was lost; once the first task has
// landed it, the retried task finds it landed. One submit in all.
func TestExportRunBusyWhileAnotherTaskSubmits(t *testing.T) {
	c := exportCLI(t, 600, 300)
	url := "file://" + c.path("bucket")
	wantCode(t, c.run("export", "plan", "agents", "--by", "state", "--out", url), 0)
	before := len(submitBodies(c.srv))
	c.srv.InjectFault("POST", "/v1/agents/bulk-delivery", lendgraphtest.Fault{Kind: lendgraphtest.Stall, Delay: 3 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := c.command(ctx, "export", "run", "--plan", url, "--shard", "0")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); len(submitBodies(c.srv)) == before; {
		if time.Now().After(deadline) {
			t.Fatal("the first task never submitted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := c.run("export", "run", "--plan", url, "--shard", "0")
	wantCode(t, r, exitBusy)
	if !strings.Contains(r.stderr, "another task") || strings.Contains(r.stderr, "resubmit-uncertain") {
		t.Errorf("the second task: %s", r.stderr)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("the first task: %v", err)
	}
	wantCode(t, c.run("export", "run", "--plan", url, "--shard", "0"), 0)
	if n := len(submitBodies(c.srv)) - before; n != 1 {
		t.Errorf("%d submits for one shard", n)
	}
}
