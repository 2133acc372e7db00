package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// plant makes name a symbolic link to a file of the user's outside the
// working directory, and returns a check that the file kept its bytes.
func plant(t *testing.T, name string) (check func(what string)) {
	t.Helper()
	victim := filepath.Join(t.TempDir(), "victim.txt")
	was := []byte("the user's own file, which the tool must never write\n")
	if err := os.WriteFile(victim, was, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, name); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	return func(what string) {
		t.Helper()
		got, err := os.ReadFile(victim)
		if err != nil || !bytes.Equal(got, was) {
			t.Errorf("%s: the victim holds %d bytes %.40q (%v), want its own %d", what, len(got), got, err, len(was))
		}
	}
}

// completedDelivery submits a csv delivery of agents through the SDK and
// waits for it; it returns the job and the file's bytes.
func completedDelivery(t *testing.T, c *cli, limit int64) (*lendgraph.DeliveryJob[lendgraph.Agent], []byte) {
	t.Helper()
	ctx := context.Background()
	job, err := c.srv.Client().Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.Wait(ctx, lendgraph.WithPollInterval(5*time.Millisecond, 20*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if _, err := job.Download(ctx, &want); err != nil {
		t.Fatal(err)
	}
	return job, want.Bytes()
}

// TestDeliverPlantedLinks plants a symbolic link at each name deliver
// writes beside -o FILE, and finds the file it points to unchanged: a link
// at FILE.part is refused, one at a name the tool replaces (the record's
// temporary file) is never followed.
func TestDeliverPlantedLinks(t *testing.T) {
	c := newCLI(t)
	job, want := completedDelivery(t, c, 300)
	storage := func() int { return c.srv.CountRequests("GET", "/objects/{key...}") }

	// --job ID -o agents2.csv with agents2.csv.part planted: refused.
	check := plant(t, c.path("agents2.csv.part"))
	before := storage()
	r := c.run("deliver", "agents", "--job", job.ID, "-o", "agents2.csv")
	check("--job with FILE.part planted")
	wantCode(t, r, exitFailure)
	if !strings.Contains(r.stderr, "agents2.csv.part is a symbolic link") {
		t.Errorf("stderr does not say why:\n%s", r.stderr)
	}
	if n := storage() - before; n != 0 {
		t.Errorf("%d storage requests for a refused file", n)
	}

	// --job ID -o agents3.csv with agents3.csv.part.meta.tmp planted: the
	// download completes and never writes through it.
	check = plant(t, c.path("agents3.csv.part.meta.tmp"))
	r = c.run("deliver", "agents", "--job", job.ID, "-o", "agents3.csv")
	check("--job with FILE.part.meta.tmp planted")
	wantCode(t, r, 0)
	if got := mustRead(t, c.path("agents3.csv")); got != string(want) {
		t.Error("agents3.csv differs from the delivery")
	}

	// A fresh deliver with FILE.part planted: refused before submitting.
	check = plant(t, c.path("agents5.csv.part"))
	submits := c.srv.CountRequests("POST", "/v1/agents/bulk-delivery")
	r = c.run("deliver", "agents", "--format", "csv", "--limit", "10", "-o", "agents5.csv")
	check("a fresh deliver with FILE.part planted")
	wantCode(t, r, exitUsage)
	if n := c.srv.CountRequests("POST", "/v1/agents/bulk-delivery") - submits; n != 0 {
		t.Errorf("%d submits with FILE.part planted", n)
	}
}

// TestDeliverLinkPlantedAfterSubmit plants FILE.part between "submitted
// delivery job" and the download, past the check made before submitting.
func TestDeliverLinkPlantedAfterSubmit(t *testing.T) {
	c := newCLI(t)
	if err := c.srv.Apply(lendgraphtest.Settings{JobRate: map[string]float64{"delivery": 400}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := c.command(ctx, "deliver", "agents", "--format", "csv", "--limit", "400", "-o", "agents4.csv")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var said strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		said.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "submitted delivery job") {
			break
		}
	}
	check := plant(t, c.path("agents4.csv.part"))
	for sc.Scan() {
		said.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	check("a link planted after the submit")
	if err == nil || !strings.Contains(said.String(), "agents4.csv.part is a symbolic link") {
		t.Fatalf("deliver with a link planted after the submit: %v\n%s", err, said.String())
	}
	if strings.Contains(said.String(), c.real) {
		t.Fatal("the key is on stderr")
	}
}

// TestDeliverMaxBytes: --max-bytes below the file's size, and a delivery
// declaring 10 TB on a file system with less free, fail before any byte
// is fetched or written, naming the flag or the free space.
func TestDeliverMaxBytes(t *testing.T) {
	c := newCLI(t)
	job, want := completedDelivery(t, c, 300)
	storage := func() int { return c.srv.CountRequests("GET", "/objects/{key...}") }
	empty := func(what, dir string) {
		t.Helper()
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s: %d files written in %s", what, len(ents), dir)
		}
	}

	dir := t.TempDir()
	before := storage()
	r := c.run("deliver", "agents", "--job", job.ID, "--max-bytes", "100", "-o", filepath.Join(dir, "agents.csv"))
	wantCode(t, r, exitFailure)
	if !strings.Contains(r.stderr, "--max-bytes 100: delivery job "+job.ID) || !strings.Contains(r.stderr, "nothing was written") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	empty("--max-bytes", dir)
	if n := storage() - before; n != 0 {
		t.Errorf("--max-bytes: %d storage requests", n)
	}
	r = c.run("deliver", "agents", "--job", job.ID, "--max-bytes", "100", "-o", "-")
	wantCode(t, r, exitFailure)
	if r.stdout != "" || !strings.Contains(r.stderr, "--max-bytes 100") {
		t.Errorf("-o - over --max-bytes: stdout %d bytes\n%s", len(r.stdout), r.stderr)
	}
	r = c.run("deliver", "agents", "--job", job.ID, "--max-bytes", "-1", "-o", "x.csv")
	wantCode(t, r, exitUsage)
	r = c.run("deliver", "agents", "--job", job.ID, "--max-bytes", strconv.Itoa(len(want)), "-o", "exact.csv")
	wantCode(t, r, 0)

	// A status declaring 10 TB.
	st, err := c.srv.Client().Agents.DeliveryJob(job.ID).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st.Bytes = 10_000_000_000_000
	body, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	c.srv.InjectFault("GET", "/v1/agents/bulk-delivery/{jobId}", lendgraphtest.Fault{Status: 200, Body: string(body), Times: -1,
		Header: map[string]string{"Content-Type": "application/json"}})
	dir = t.TempDir()
	before = storage()
	start := time.Now()
	r = c.run("--json", "deliver", "agents", "--job", job.ID, "-o", filepath.Join(dir, "huge.csv"))
	wantCode(t, r, exitFailure)
	if !strings.Contains(r.stderr, "10.0 TB (10000000000000 bytes)") || !strings.Contains(r.stderr, "free") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	empty("10 TB", dir)
	if n := storage() - before; n != 0 {
		t.Errorf("10 TB: %d storage requests", n)
	}
	t.Logf("10 TB refused in %v", time.Since(start))
}
