//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestExportBusyShardWithoutShardFlag: a run without
// --shard that leaves a shard another process holds is told to run the
// same command again, not to "run the command without --shard".
func TestExportBusyShardWithoutShardFlag(t *testing.T) {
	c := exportCLI(t, 600, 2000)
	dir := c.path("D")
	r := c.run("export", "agents", "--by", "state", "--out", dir, "--plan-only")
	wantCode(t, r, 0)
	// Another process holds state=CA: the lock export takes on a shard (an
	// open file description lock on byte i of .locks/shards.lock, i the
	// shard's index in the plan).
	raw, err := os.ReadFile(filepath.Join(dir, "_plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		Shards []struct {
			Name string `json:"name"`
		} `json:"shards"`
	}
	if err := json.Unmarshal(raw, &plan); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(plan.Shards, func(s struct {
		Name string `json:"name"`
	}) bool {
		return s.Name == "state=CA"
	})
	if i < 0 {
		t.Fatalf("no shard state=CA in the plan: %s", raw)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".locks"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".locks", "shards.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Start: int64(i), Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
		t.Fatal(err)
	}
	r = c.run("export", "agents", "--out", dir, "--yes")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "shard state=CA: skipped: another process is working on it") ||
		!strings.Contains(r.stderr, "run the same command again to finish the export") || strings.Contains(r.stderr, "without --shard") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}
