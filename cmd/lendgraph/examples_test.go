package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// helpExamples returns every line of every command's Example, by command
// path, read from the command tree itself.
func helpExamples() map[string][]string {
	a := quietApp()
	out := map[string][]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for line := range strings.Lines(c.Example) {
			if line = strings.TrimSpace(line); line != "" {
				out[c.CommandPath()] = append(out[c.CommandPath()], line)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.rootCommand())
	return out
}

// quietApp is an app whose command tree can be walked and parsed without
// reading or printing anything.
func quietApp() *app {
	return &app{env: env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, getenv: os.Getenv}}
}

// exampleJobID is the delivery job id the re-attach examples show.
var exampleJobID = regexp.MustCompile(`\bdlv_[0-9a-f]{14}\b`)

// TestHelpExamplesRun runs every example of every command's help against
// the fake, as a user would paste it into bash, in one directory (an
// example may read what an earlier one wrote). What the test supplies, and
// nothing more: the files an example reads and that no example writes
// (property ids, an ndjson.gz delivery, fake.json), the key file the root
// example reads, "y" on stdin for the confirmation, --addr 127.0.0.1:0
// after each fake example (a fixed port may be taken), and, in a re-attach
// example, the id of the job the example before it submitted in place of
// the id shown.
func TestHelpExamplesRun(t *testing.T) {
	for _, tool := range []string{"bash", "cut", "head"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	// The export examples split by state: every record has one here.
	c := newCLI(t, lendgraphtest.WithNoStateShare(0))
	ctx := context.Background()
	sdk := c.srv.Client()
	// The inputs.
	_, ids := propertyIDs(t, c, 5)
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(c.path(name)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.path(name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("property-ids.txt", strings.Join(ids, "\n")+"\n")
	var tsv strings.Builder
	for _, id := range ids {
		tsv.WriteString(id + "\towner\n")
	}
	write("props.tsv", tsv.String())
	write(".lendgraph/key", c.key+"\n")
	write("fake.json", `{"rows": 2000, "entitlements": {"agents": {"maxRows": 1500}}}`)
	job, err := sdk.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatNDJSON, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(c.path("agents.ndjson.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := job.Download(ctx, f); err != nil {
		t.Fatal(err)
	}
	f.Close()

	examples := helpExamples()
	paths := make([]string, 0, len(examples))
	for p := range examples {
		paths = append(paths, p)
	}
	// The root's examples first (they write agents.parquet), then by name.
	sort.Slice(paths, func(i, j int) bool {
		if (paths[i] == "lendgraph") != (paths[j] == "lendgraph") {
			return paths[i] == "lendgraph"
		}
		return paths[i] < paths[j]
	})
	ran := 0
	for _, p := range paths {
		for _, line := range examples[p] {
			if p == "lendgraph fake" {
				runFakeExample(t, c, line)
				ran++
				continue
			}
			if exampleJobID.MatchString(line) {
				line = exampleJobID.ReplaceAllString(line, lastDelivery(t, c))
			}
			r := runExample(t, c, line)
			if r.code != 0 {
				t.Errorf("%s: example %q exits %d\nstdout: %.300s\nstderr: %s", p, line, r.code, r.stdout, r.stderr)
			}
			ran++
		}
	}
	if ran < 20 {
		t.Fatalf("only %d examples ran", ran)
	}
}

// runExample runs one example line with bash in the test's directory,
// with the binary first on PATH as lendgraph.
func runExample(t *testing.T, c *cli, line string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -e\n"+line)
	cmd.Dir = c.dir
	cmd.Env = []string{"PATH=" + filepath.Dir(binary) + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + c.dir,
		lendgraph.EnvBaseURL + "=" + c.srv.URL, lendgraph.EnvAPIKey + "=" + c.key, envAssumeTTY + "=1"}
	cmd.Stdin = strings.NewReader("y\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	c.checkNoKey(r)
	return r
}

// lastDelivery is the id of the newest agents delivery job the fake holds.
func lastDelivery(t *testing.T, c *cli) string {
	t.Helper()
	var newest string
	agents := c.srv.Client().Agents
	for _, j := range c.srv.Jobs() {
		if j.Kind != "delivery" || j.ID <= newest {
			continue
		}
		if _, err := agents.DeliveryJob(j.ID).Status(context.Background()); err == nil {
			newest = j.ID
		}
	}
	if newest == "" {
		t.Fatal("no delivery job to re-attach to")
	}
	return newest
}

// runFakeExample starts a fake example on a free port, waits for its line
// (or JSON object) on stdout, uses the key it printed, and stops it.
func runFakeExample(t *testing.T, c *cli, line string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "exec "+line+" --addr 127.0.0.1:0")
	cmd.Dir = c.dir
	cmd.Env = []string{"PATH=" + filepath.Dir(binary) + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + c.dir}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Wait()
		t.Errorf("fake example %q printed no line: %v\n%s", line, err, stderr.String())
		return
	}
	base := regexp.MustCompile(`(LENDGRAPH_BASE_URL=|"baseUrl":")(http://127\.0\.0\.1:\d+)`).FindStringSubmatch(first)
	key := regexp.MustCompile(`(LENDGRAPH_API_KEY=|"key":")(lg_test_[0-9a-f]+)`).FindStringSubmatch(first)
	if base == nil || key == nil {
		t.Errorf("fake example %q: line %q", line, first)
	} else {
		client, err := lendgraph.NewClient(lendgraph.WithBaseURL(base[2]), lendgraph.WithAPIKey(key[2]))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.Agents.List(ctx, nil); err != nil && !strings.Contains(line, "--fault") {
			t.Errorf("fake example %q: listing agents: %v", line, err)
		}
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("fake example %q did not stop cleanly: %v\n%s", line, err, stderr.String())
	}
}
