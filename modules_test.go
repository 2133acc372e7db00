package lendgraph_test

import (
	"os"
	"os/exec"
	"testing"
)

// TestModules_CLI runs the tests of the command line tool. The tool is a
// module of its own (cmd/lendgraph/go.mod) so that programs importing the
// SDK do not require its dependencies; `go test ./...` here stops at a
// module boundary, and this test carries it over, so the README's one test
// command still tests everything. CI runs that module's tests itself (with
// -race) and sets LENDGRAPH_SKIP_NESTED.
func TestModules_CLI(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the cmd/lendgraph module's tests are not run")
	}
	if os.Getenv("LENDGRAPH_SKIP_NESTED") != "" {
		t.Skip("LENDGRAPH_SKIP_NESTED is set: the cmd/lendgraph module's tests run on their own")
	}
	args := []string{"test"}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./...")...)
	cmd.Dir = "cmd/lendgraph"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %v in cmd/lendgraph: %v\n%s", args, err, out)
	}
	t.Logf("cmd/lendgraph: %s", out)
}
