package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// docsBlocks returns the ```sh blocks of docs/cli.md, in order, but those
// marked <!-- not run: why --> on the line before: each block's text and
// the line of its opening fence.
func docsBlocks(t *testing.T) (blocks []string, lines []int) {
	t.Helper()
	text := mustRead(t, "../../docs/cli.md")
	all := strings.Split(text, "\n")
	for i := 0; i < len(all); i++ {
		if strings.TrimSpace(all[i]) != "```sh" {
			continue
		}
		skip := false
		for j := i - 1; j >= 0; j-- {
			if prev := strings.TrimSpace(all[j]); prev != "" {
				skip = strings.HasPrefix(prev, "<!-- not run")
				break
			}
		}
		start := i + 1
		var body []string
		for i++; i < len(all) && strings.TrimSpace(all[i]) != "```"; i++ {
			body = append(body, all[i])
		}
		if !skip {
			blocks, lines = append(blocks, strings.Join(body, "\n")+"\n"), append(lines, start)
		}
	}
	return blocks, lines
}

// TestDocsCLIBlocksRun runs every shell block of docs/cli.md, as written,
// with bash in one directory (a block may read what an earlier one
// wrote), against the fake: LENDGRAPH_BASE_URL and LENDGRAPH_API_KEY name
// it, as the guide's set-up block has the reader export the key. Blocks
// marked <!-- not run: why --> (an install from the network, an object
// store) are left out. A block fails the test when bash exits non-zero or
// the key shows in its output.
func TestDocsCLIBlocksRun(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "cut"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	blocks, lines := docsBlocks(t)
	if len(blocks) < 4 {
		t.Fatalf("only %d shell blocks to run in docs/cli.md", len(blocks))
	}
	// The guide's blocks assume the fake's default dataset size.
	c := newCLI(t, lendgraphtest.WithDefaultRows(10000))
	for i, block := range blocks {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", "set -e\n"+block)
		cmd.Dir = c.dir
		cmd.Env = []string{"PATH=" + filepath.Dir(binary) + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + c.dir,
			lendgraph.EnvBaseURL + "=" + c.srv.URL, lendgraph.EnvAPIKey + "=" + c.key}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		r := result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
		c.checkNoKey(r)
		if err != nil {
			t.Errorf("docs/cli.md:%d: the block exits %d (%v)\n%s\nstdout: %.500s\nstderr: %s", lines[i], r.code, err, block, r.stdout, r.stderr)
		}
	}
}
