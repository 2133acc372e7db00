//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestExportBusyShardWithoutShardFlag (issue 22, item 4): a run without
// --shard that leaves a shard another process holds is told to run the
// same command again, not to "run the command without --shard".
func TestExportBusyShardWithoutShardFlag(t *testing.T) {
	c := exportCLI(t, 600, 2000)
	dir := c.path("D")
	r := c.run("export", "agents", "--by", "state", "--out", dir, "--plan-only")
	wantCode(t, r, 0)
	// Another process holds state=CA: the lock export takes on a shard (a
	// flock on .locks/shard-<first 8 bytes of its name's sha256>.lock).
	sum := sha256.Sum256([]byte("state=CA"))
	if err := os.MkdirAll(filepath.Join(dir, ".locks"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".locks", "shard-"+hex.EncodeToString(sum[:8])+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	r = c.run("export", "agents", "--out", dir, "--yes")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "shard state=CA: skipped: another process is working on it") ||
		!strings.Contains(r.stderr, "run the same command again to finish the export") || strings.Contains(r.stderr, "without --shard") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}
