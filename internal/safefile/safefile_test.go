package safefile_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/lendgraph/lendgraph-go/internal/safefile"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestPlantedLinks: at a name holding a symbolic link, no function writes
// through it; the file it points to keeps its bytes.
func TestPlantedLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	was := []byte("victim")
	if err := os.WriteFile(victim, was, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "out.part")
	if err := os.Symlink(victim, link); err != nil {
		t.Skipf("no symbolic links: %v", err)
	}
	if _, err := safefile.Create(link); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create: %v, want fs.ErrExist", err)
	}
	if _, err := safefile.Recreate(link); !errors.Is(err, safefile.ErrUnsafe) {
		t.Errorf("Recreate: %v, want ErrUnsafe", err)
	}
	if _, err := safefile.Open(link); !errors.Is(err, safefile.ErrUnsafe) {
		t.Errorf("Open: %v, want ErrUnsafe", err)
	}
	if _, err := safefile.ReadFile(link); !errors.Is(err, safefile.ErrUnsafe) {
		t.Errorf("ReadFile: %v, want ErrUnsafe", err)
	}
	if err := safefile.WriteAtomic(link, []byte("record")); err != nil {
		t.Fatalf("WriteAtomic: %v", err)
	}
	if got, _ := os.ReadFile(victim); !bytes.Equal(got, was) {
		t.Fatalf("the victim holds %q", got)
	}
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("WriteAtomic left %v, %v at the name, want its own file", fi, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files in the directory, want only the record", len(ents))
	}
}

// TestRecreate: a regular file of the user is replaced by a new empty
// file of mode 0600; Publish gives it the mode of any new file.
func TestRecreate(t *testing.T) {
	dir := t.TempDir()
	part, out := filepath.Join(dir, "out.part"), filepath.Join(dir, "out")
	if err := os.WriteFile(part, []byte("left by an earlier run"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := safefile.Recreate(part)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	if fi.Size() != 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("Recreate: %d bytes, mode %v; want an empty file of mode 0600", fi.Size(), fi.Mode().Perm())
	}
	if err := safefile.Publish(f, part, out); err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(dir, "probe")
	_ = os.WriteFile(probe, nil, 0o666)
	want, _ := os.Stat(probe)
	if got, err := os.Stat(out); err != nil || got.Mode().Perm() != want.Mode().Perm() {
		t.Fatalf("published mode %v (%v), want %v", got.Mode().Perm(), err, want.Mode().Perm())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("%d files, want the output and the probe", len(ents))
	}
}
