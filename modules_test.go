package lendgraph_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestModules_CLI runs the tests of the command line tool. The tool is a
// module of its own (cmd/lendgraph/go.mod) so that programs importing the
// SDK do not require its dependencies; `go test ./...` here stops at a
// module boundary, and this test carries it over, so the README's one test
// command still tests everything. CI runs that module's tests itself (with
// -race) and sets LENDGRAPH_SKIP_NESTED.
func TestModules_CLI(t *testing.T) { testNested(t, "cmd/lendgraph") }

// TestModules_OTel runs the tests of the OpenTelemetry adapter, a module of
// its own (otel/go.mod) for the same reason, the same way.
func TestModules_OTel(t *testing.T) { testNested(t, "otel") }

// testNested runs `go test ./...` in the nested module in dir.
func testNested(t *testing.T, dir string) {
	if testing.Short() {
		t.Skipf("-short: the %s module's tests are not run", dir)
	}
	if os.Getenv("LENDGRAPH_SKIP_NESTED") != "" {
		t.Skipf("LENDGRAPH_SKIP_NESTED is set: the %s module's tests run on their own", dir)
	}
	args := []string{"test"}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./...")...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %v in %s: %v\n%s", args, dir, err, out)
	}
	t.Logf("%s: %s", dir, out)
}

// TestModules_Footprint builds testdata/footprint, a program importing
// only package lendgraph, as a module requiring the SDK would (outside the
// workspace): it links no module beyond the SDK's six (no OpenTelemetry:
// the adapter is the module github.com/lendgraph/lendgraph-go/otel) and
// stays within 14 MB.
func TestModules_Footprint(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the footprint program is not built")
	}
	bin := filepath.Join(t.TempDir(), "footprint")
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/footprint")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var deps []string
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "dep" {
			deps = append(deps, f[1])
		}
	}
	want := []string{"github.com/go-json-experiment/json", "github.com/google/go-querystring", "github.com/hashicorp/go-cleanhttp",
		"github.com/hashicorp/go-retryablehttp", "github.com/klauspost/compress", "golang.org/x/time"}
	if strings.Join(deps, " ") != strings.Join(want, " ") {
		t.Errorf("the program links %v, want %v", deps, want)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 14<<20 {
		t.Errorf("the program is %d bytes, over 14 MB", fi.Size())
	}
	t.Logf("%d bytes, %d modules linked besides the SDK", fi.Size(), len(deps))
}
