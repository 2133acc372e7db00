// Package safefile creates, continues and replaces the files a download
// writes without following a symbolic link planted at a name it can
// predict (PATH.part, PATH.part.meta, a temporary file beside them), and
// without truncating a file it did not create. Anyone who can write into
// the directory (a shared /tmp, a group-writable folder, a CI workspace)
// could otherwise make the writer overwrite any file its user can write.
//
//   - New files are created exclusively (O_EXCL, no link followed), 0600:
//     Create, Recreate, WriteAtomic.
//   - A file continued is opened without following a link and checked to be
//     a regular file of this user: Open, ReadFile.
//   - Publish gives a finished file the mode a new file gets (0666 less the
//     umask) and renames it over its final name; a rename replaces a link
//     there, never what it points to.
package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrUnsafe is what a file that is not this user's regular file matches:
// a symbolic link, a directory, a device, another user's file.
var ErrUnsafe = errors.New("not a regular file of this user; refusing to write through it")

// Create creates path for reading and writing, readable by the user alone
// (0600). Anything already at path, a dangling link included, is an error
// matching fs.ErrExist.
func Create(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
}

// Recreate is Create after removing a regular file of this user left at
// path (an earlier run's part file). Anything else there is refused with
// an error matching ErrUnsafe and left as it is.
func Recreate(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	case !owned(fi):
		return nil, unsafeErr(path, fi)
	default:
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return Create(path)
}

// Open opens an existing file for reading and writing without following a
// link at path, and checks that it is a regular file of this user (an
// error matching ErrUnsafe otherwise).
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|oNoFollow, 0)
	if err != nil {
		if isLinkErr(path, err) {
			return nil, fmt.Errorf("%s is a symbolic link: %w", path, ErrUnsafe)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !owned(fi) {
		err = unsafeErr(path, fi)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile reads path when it is a regular file of this user, without
// following a link; anything else is an error matching ErrUnsafe (a
// missing file: fs.ErrNotExist).
func ReadFile(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !owned(fi) {
		return nil, unsafeErr(path, fi)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !owned(fi) {
		return nil, unsafeErr(path, fi)
	}
	return io.ReadAll(f)
}

// WriteAtomic replaces path with data: written to a new temporary file in
// path's directory (created exclusively, 0600), fsynced, renamed over path,
// and the directory fsynced. A link at path is replaced, never followed.
func WriteAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	fail := func(err error) error {
		_ = f.Close()
		_ = os.Remove(tmp)
		return err
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	SyncDir(filepath.Dir(path))
	return nil
}

// Publish gives f (a file Create made at part) the mode a new file gets
// under the umask and renames part to path: the 0600 part file becomes
// the output. f is not closed.
func Publish(f *os.File, part, path string) error {
	mode, err := newFileMode(filepath.Dir(part))
	if err != nil {
		return err
	}
	if err := f.Chmod(mode); err != nil {
		return err
	}
	return os.Rename(part, path)
}

// newFileMode is the mode a file created with 0666 gets in dir: 0666 less
// the process's umask, read by creating (and removing) a file there, as
// the umask cannot be read without changing it.
func newFileMode(dir string) (fs.FileMode, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	probe := filepath.Join(dir, ".lendgraph-mode-"+hex.EncodeToString(b[:]))
	f, err := os.OpenFile(probe, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o666)
	if err != nil {
		return 0, err
	}
	fi, err := f.Stat()
	_ = f.Close()
	_ = os.Remove(probe)
	if err != nil {
		return 0, err
	}
	return fi.Mode().Perm(), nil
}

// SyncDir makes a rename in dir durable where the system allows it (not on
// Windows, where directories cannot be opened for syncing).
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

func unsafeErr(path string, fi fs.FileInfo) error {
	what := "not a regular file"
	switch {
	case fi == nil:
	case fi.Mode()&fs.ModeSymlink != 0:
		what = "a symbolic link"
	case fi.Mode().IsRegular():
		what = "another user's file"
	case fi.IsDir():
		what = "a directory"
	}
	return fmt.Errorf("%s is %s: %w", path, what, ErrUnsafe)
}

// isLinkErr tells whether opening path with O_NOFOLLOW failed because
// path is a symbolic link.
func isLinkErr(path string, err error) bool {
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	fi, lerr := os.Lstat(path)
	return lerr == nil && fi.Mode()&fs.ModeSymlink != 0
}
