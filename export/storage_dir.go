package export

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"
)

// dirBackend is an export in a local directory. Every file goes through
// an os.Root of the directory, so no name is followed out of it through a
// symbolic link, and every file the export writes is created exclusively
// (O_EXCL, under a random name beside its final one) before it is
// renamed into place: a file planted at a predictable name is replaced,
// never written through.
type dirBackend struct {
	path string

	mu   sync.Mutex
	root *os.Root // opened on first use; nil while the directory does not exist

	permOnce sync.Once
	perm     fs.FileMode // what a file created 0644 gets under the umask
}

func openDir(p string) (*Storage, error) {
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		return nil, invalid("dest", "%s is not a directory", p)
	}
	return &Storage{b: &dirBackend{path: p}, where: p}, nil
}

// dir returns the directory's root; create makes the directory first when
// it is missing, else a missing directory is errNotFound.
func (d *dirBackend) dir(create bool) (*os.Root, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.root != nil {
		return d.root, nil
	}
	if create {
		if err := os.MkdirAll(d.path, 0o755); err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
	}
	r, err := os.OpenRoot(d.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("export: %s: %w", d.path, errNotFound)
		}
		return nil, fmt.Errorf("export: %w", err)
	}
	d.root = r
	return r, nil
}

func (d *dirBackend) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.root == nil {
		return nil
	}
	err := d.root.Close()
	d.root = nil
	return err
}

func (d *dirBackend) read(_ context.Context, key string) ([]byte, error) {
	r, err := d.dir(false)
	if err != nil {
		return nil, err
	}
	return r.ReadFile(key)
}

// tempName is a new file's temporary name beside key: hidden, random, and
// ending in .tmp (sweep removes those a killed writer left).
func tempName(key string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	dir, base := path.Split(key)
	return dir + "." + base + "." + hex.EncodeToString(b[:]) + ".tmp"
}

// temporary matches tempName's names.
var temporary = regexp.MustCompile(`^\..+\.[0-9a-f]{16}\.tmp$`)

// linkFile is os.Root.Link; a test replaces it with a file system that has
// no hard links.
var linkFile = (*os.Root).Link

func (d *dirBackend) put(_ context.Context, key string, data []byte, exclusive bool) (err error) {
	r, err := d.dir(true)
	if err != nil {
		return err
	}
	return writeFile(r, key, data, exclusive)
}

// writeFile writes key whole: a temporary file beside it, created
// exclusively, synced, then renamed over key (exclusive: hard-linked to
// key, which fails when key exists).
func writeFile(r *os.Root, key string, data []byte, exclusive bool) (err error) {
	dir := path.Dir(key)
	if err := r.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := tempName(key)
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if f != nil {
			_ = f.Close()
		}
		_ = r.Remove(tmp) // after a rename there is nothing to remove
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	err, f = f.Close(), nil
	if err != nil {
		return err
	}
	if exclusive {
		// The temporary file, complete, gets the final name only if no
		// file has it: one writer of two wins, and a reader never sees
		// half a file.
		err = linkFile(r, tmp, key)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", key, errExists)
		}
		if err != nil {
			// A file system without hard links (some FUSE and SMB
			// mounts): the final name created exclusively instead,
			// and written in place.
			return putInPlace(r, key, data)
		}
	} else if err := r.Rename(tmp, key); err != nil {
		return err
	}
	if !durableName(key) {
		return nil
	}
	return syncDir(r, dir)
}

// durableName reports whether a write of key is made durable at once,
// directory and all: the plan, the claims (a claim lost to a crash would
// let a shard the service may hold a job for be submitted again), the
// manifest and _SUCCESS. A record or a data file is synced but its rename
// is left to the file system: one lost to a crash is landed again from
// the job its claim holds, with no new charge, and a sync of the directory
// for each would cost a write of its block a shard.
func durableName(key string) bool { return !strings.HasPrefix(key, recordsDir) }

// reserve creates, beside key, a file of size bytes (created exclusively,
// allocated, synced: its blocks are the file system's no more), which commit
// overwrites in place with the object's bytes, padded with spaces, and
// renames over key: a write that needs no new room, so that a full disk
// cannot fail it.
func (d *dirBackend) reserve(_ context.Context, key string, size int) (reservation, error) {
	r, tmp, f, err := d.createBeside(key, os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	err = allocate(f, size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = r.Remove(tmp)
		return nil, err
	}
	return &dirReservation{r: r, tmp: tmp, key: key, size: size}, nil
}

// fill writes size spaces into f: room taken the slow way.
func fill(f *os.File, size int) error {
	_, err := f.Write(bytes.Repeat([]byte{' '}, size))
	return err
}

// dirReservation is a file of room taken for a write of key.
type dirReservation struct {
	r        *os.Root
	tmp, key string
	size     int
	spent    bool
}

// commit writes data over the reserved file, cut to data's length (which
// frees room and takes none), and renames it over key. Data larger than
// the room is put as any write is.
func (v *dirReservation) commit(_ context.Context, data []byte) error {
	if v.spent {
		return errors.New("export: a reservation used twice")
	}
	v.spent = true
	if len(data) > v.size {
		_ = v.r.Remove(v.tmp)
		return writeFile(v.r, v.key, data, false)
	}
	f, err := v.r.OpenFile(v.tmp, os.O_WRONLY|noFollow, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		err = f.Truncate(int64(len(data)))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = v.r.Rename(v.tmp, v.key)
	}
	if err != nil {
		_ = v.r.Remove(v.tmp)
		return err
	}
	return syncDir(v.r, path.Dir(v.key))
}

func (v *dirReservation) release() {
	if !v.spent {
		v.spent = true
		_ = v.r.Remove(v.tmp)
	}
}

// putInPlace creates key exclusively and writes data into it: the
// exclusive write of a file system without hard links.
func putInPlace(r *os.Root, key string, data []byte) error {
	f, err := r.OpenFile(key, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s: %w", key, errExists)
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = r.Remove(key)
		return err
	}
	return syncDir(r, path.Dir(key))
}

func (d *dirBackend) remove(_ context.Context, key string) error {
	r, err := d.dir(false)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := r.Remove(key); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (d *dirBackend) list(_ context.Context, dir string) ([]string, error) {
	r, err := d.dir(false)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f, err := r.Open(strings.TrimSuffix(dir, "/"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			keys = append(keys, dir+e.Name())
		}
	}
	return keys, nil
}

func (d *dirBackend) stat(_ context.Context, key string) (int64, string, error) {
	r, err := d.dir(false)
	if err != nil {
		return 0, "", err
	}
	fi, err := r.Lstat(key)
	if err != nil {
		return 0, "", err
	}
	if !fi.Mode().IsRegular() {
		return 0, "", fmt.Errorf("%s is not a regular file (%s)", key, fi.Mode().Type())
	}
	return fi.Size(), "", nil
}

// openFile opens a data file for reading: a regular file only.
func (d *dirBackend) openFile(key string) (*os.File, int64, error) {
	if _, _, err := d.stat(context.Background(), key); err != nil {
		return nil, 0, err
	}
	r, err := d.dir(false)
	if err != nil {
		return nil, 0, err
	}
	f, err := r.OpenFile(key, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

func (d *dirBackend) open(_ context.Context, key string) (io.ReadCloser, int64, error) {
	f, n, err := d.openFile(key)
	if err != nil {
		return nil, 0, err
	}
	return f, n, nil
}

func (d *dirBackend) openAt(_ context.Context, key string) (io.ReaderAt, int64, func() error, error) {
	f, n, err := d.openFile(key)
	if err != nil {
		return nil, 0, nil, err
	}
	return f, n, f.Close, nil
}

// create writes a data file into a temporary file beside its final name,
// created exclusively and readable by the owner alone until published.
func (d *dirBackend) create(_ context.Context, key, _ string, _ bool) (dataWriter, error) {
	r, tmp, f, err := d.createBeside(key, os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	return &dirWriter{d: d, r: r, f: f, tmp: tmp, key: key}, nil
}

// createBeside creates a temporary file beside key (its directories made
// first), exclusively, opened with flag and perm.
func (d *dirBackend) createBeside(key string, flag int, perm os.FileMode) (r *os.Root, tmp string, f *os.File, err error) {
	if r, err = d.dir(true); err != nil {
		return nil, "", nil, err
	}
	if err := r.MkdirAll(path.Dir(key), 0o755); err != nil {
		return nil, "", nil, err
	}
	tmp = tempName(key)
	if f, err = r.OpenFile(tmp, flag|os.O_CREATE|os.O_EXCL, perm); err != nil {
		return nil, "", nil, err
	}
	return r, tmp, f, nil
}

// dirWriter is a data file being written into its temporary file.
type dirWriter struct {
	d      *dirBackend
	r      *os.Root
	f      *os.File
	tmp    string
	key    string
	n      int64
	closed bool
}

func (w *dirWriter) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	w.n += int64(n)
	return n, err
}

func (w *dirWriter) finish() error                  { return w.f.Sync() }
func (w *dirWriter) readerAt() (io.ReaderAt, error) { return w.f, nil }

// publish gives the file the dataset's mode and renames it into place.
func (w *dirWriter) publish(context.Context) (int64, string, error) {
	if err := w.f.Chmod(w.d.filePerm(w.r)); err != nil {
		w.abort()
		return 0, "", err
	}
	err := w.f.Close()
	w.closed = true
	if err == nil {
		err = w.r.Rename(w.tmp, w.key)
	}
	if err != nil {
		_ = w.r.Remove(w.tmp)
		return 0, "", err
	}
	return w.n, "", nil // see durableName
}

func (w *dirWriter) abort() {
	if !w.closed {
		_ = w.f.Close()
		w.closed = true
	}
	_ = w.r.Remove(w.tmp)
}

// filePerm is the mode a file created 0644 gets under the process's umask
// (asked of the file system once: the umask cannot be read without being
// changed).
func (d *dirBackend) filePerm(r *os.Root) fs.FileMode {
	d.permOnce.Do(func() {
		d.perm = 0o644
		name := tempName(".perm")
		f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return
		}
		if fi, err := f.Stat(); err == nil {
			d.perm = fi.Mode().Perm()
		}
		_ = f.Close()
		_ = r.Remove(name)
	})
	return d.perm
}

// lock takes shard i's lock in .locks/ (see lockShard): no file is
// followed out of the directory, truncated or written.
func (d *dirBackend) lock(i int, name string) (func(), bool, error) {
	r, err := d.dir(true)
	if err != nil {
		return nil, false, err
	}
	if err := r.MkdirAll(strings.TrimSuffix(locksDir, "/"), 0o755); err != nil {
		return nil, false, fmt.Errorf("export: lock: %w", err)
	}
	unlock, ok, err := lockShard(r, i, name)
	if err != nil {
		return nil, false, fmt.Errorf("export: lock of shard %s: %w", name, err)
	}
	return unlock, ok, nil
}

// lockFile opens the lock file name in .locks/ and takes lock on it, a
// byte range or the whole file, without waiting: false when another
// process (or another open of the file) holds it.
func lockFile(r *os.Root, name string, lock func(*os.File) (func(), error)) (func(), bool, error) {
	f, err := r.OpenFile(locksDir+name, os.O_RDWR|os.O_CREATE|noFollow, 0o644)
	if err != nil {
		return nil, false, err
	}
	unlock, err := lock(f)
	if errors.Is(err, errLocked) {
		_ = f.Close()
		return nil, false, nil
	}
	if err != nil {
		_ = f.Close()
		return nil, false, err
	}
	return func() { unlock(); _ = f.Close() }, true, nil
}

func (d *dirBackend) locks() bool { return true }

// staleTemporary is the age after which sweep takes a temporary file for
// one a killed writer left (a live writer renames it within seconds).
const staleTemporary = 10 * time.Minute

// sweep removes the temporary files killed writers left (hidden, so no
// reader takes them for data, but they take room).
func (d *dirBackend) sweep(context.Context) error {
	r, err := d.dir(false)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return fs.WalkDir(r.FS(), ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile, or unreadable: not ours to judge
		}
		if e.IsDir() && p == strings.TrimSuffix(locksDir, "/") {
			return fs.SkipDir
		}
		if !e.Type().IsRegular() || !temporary.MatchString(e.Name()) {
			return nil
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleTemporary {
			_ = r.Remove(p)
		}
		return nil
	})
}

// syncDir makes a rename in dir durable. Systems that cannot sync a
// directory (Windows) have nothing to do.
func syncDir(r *os.Root, dir string) error {
	f, err := r.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) && !isUnsupported(err) {
		return err
	}
	return nil
}

func isUnsupported(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(strings.ToLower(pe.Err.Error()), "not supported")
}
