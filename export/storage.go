package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path/filepath"
	"strings"
)

// Storage is where an export lands: a local directory, or a prefix of an
// object store bucket. Every function of the package that reads or writes
// an export takes one, and does the same in both: the same layout, the
// same claims and records, the same commit. Open one with Open; close it
// when done.
type Storage struct {
	b     backend
	where string // for messages: the directory, or the URL without its query
}

// Open opens the destination of an export: a directory path (created when
// missing; a file:// URL names one too), or an object store URL
// (s3://bucket/prefix, gs://bucket/prefix, azblob://container/prefix),
// through gocloud.dev/blob with the drivers the program registered by
// importing them (gocloud.dev/blob/s3blob for s3://, gcsblob for gs://,
// azureblob for azblob://); this package registers none, so that a
// program pays only for the stores it uses. A URL's path is the export's
// prefix inside the bucket: s3://bucket/exports/agents is the bucket
// "bucket" under "exports/agents/". Its query parameters are the
// driver's (for S3: region, endpoint, use_path_style; see
// gocloud.dev/blob/s3blob). Credentials come from the store's standard
// chains (for S3: the AWS environment variables, shared config and
// credentials files, the instance's role); a URL that holds a user or a
// password is refused, and no error repeats a URL's query.
//
// In a directory, every file is written inside it and nowhere else: no
// name is followed out of it through a symbolic link, every new file is
// created exclusively (a temporary file beside its final name, renamed into
// place), and data files are readable by the owner alone (0600) until they
// are complete and checked; then every file of the dataset has the mode a
// file created 0644 gets under the process's umask.
func Open(ctx context.Context, dest string) (*Storage, error) {
	if dest == "" {
		return nil, invalid("dest", "is empty; name the export's directory, or an object store URL such as s3://bucket/prefix")
	}
	if !strings.Contains(dest, "://") {
		return openDir(dest)
	}
	u, err := url.Parse(dest)
	if err != nil || u.Scheme == "" {
		return nil, invalid("dest", "%q is not a directory or a URL like s3://bucket/prefix", redactURL(dest))
	}
	if u.User != nil {
		return nil, invalid("dest", "%s holds credentials; give them through the store's own settings (for S3: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile), never in the URL", redactURL(dest))
	}
	if u.Scheme == "file" {
		if u.Host != "" && u.Host != "localhost" {
			return nil, invalid("dest", "%s names a host; a file:// URL is a local directory: file:///path", redactURL(dest))
		}
		return openDir(filepath.FromSlash(u.Path))
	}
	return openBucket(ctx, u, dest)
}

// Close releases the storage: the directory's handle, or the bucket.
func (s *Storage) Close() error {
	if s == nil || s.b == nil {
		return nil
	}
	return s.b.close()
}

// String names the storage for messages: the directory, or the URL
// without its query.
func (s *Storage) String() string {
	if s == nil {
		return "<nil storage>"
	}
	return s.where
}

// checkStorage refuses a nil or closed storage.
func checkStorage(s *Storage) error {
	if s == nil || s.b == nil {
		return invalid("storage", "is nil; open the export's destination with Open")
	}
	return nil
}

// The names of an export's own objects, beside the data files (all off the
// part-* glob; Spark skips names starting with _ or a dot).
const (
	// PlanFile is the plan the runs of an export share. Run writes it
	// (only if absent) and refuses a storage that holds another plan.
	PlanFile = "_plan.json"
	// ManifestFile is written by Commit: the plan and every shard's job,
	// rows, bytes, sha256 and charge, and the verification.
	ManifestFile = "_manifest.json"
	// SuccessFile is written last by Commit: a reader that sees it sees
	// the whole dataset.
	SuccessFile = "_SUCCESS"
	// claimsDir holds a claim a shard: created only when absent before
	// the shard's submit, rewritten with the job id right after the answer.
	claimsDir = "_claims/"
	// recordsDir holds a record a shard (<n>.json: job, rows, bytes,
	// sha256, charge, the data object's ETag) and the digest of its ids
	// (<n>.ids), written once its data object landed and checked out.
	recordsDir = "_shards/"
	// stagingDir holds a parquet file in a bucket while it is checked,
	// before it is copied to its final name (parquet is decoded at random).
	stagingDir = "_staging/"
	// locksDir holds the lock files of a directory (hidden from DuckDB's
	// globs and from Spark): one a shard, so that two processes on one
	// machine never work on a shard at once.
	locksDir = ".locks/"
)

// errNotFound is an object that is not there; errExists an exclusive write
// of an object that is.
var (
	errNotFound = fs.ErrNotExist
	errExists   = fs.ErrExist
)

// backend is what an export does with its storage. The directory and the
// bucket implement it; everything above it is written once.
type backend interface {
	// read returns a small object whole (a plan, claim, record, digest,
	// the manifest); one that is not there is an error matching
	// errNotFound.
	read(ctx context.Context, key string) ([]byte, error)
	// put writes a small object whole, atomically: a reader sees the old
	// object or the new one. exclusive writes it only when absent, else
	// fails matching errExists.
	put(ctx context.Context, key string, data []byte, exclusive bool) error
	// reserve takes, ahead of a write of key, the room it needs, so that
	// the write cannot fail for want of space (a directory: a file of
	// size bytes beside key, written over and renamed into place; a
	// bucket cannot reserve, and its reservation is a plain put).
	reserve(ctx context.Context, key string, size int) (reservation, error)
	// remove deletes an object; one that is not there is no error.
	remove(ctx context.Context, key string) error
	// list returns the keys of the objects directly under dir ("_claims/").
	list(ctx context.Context, dir string) ([]string, error)
	// stat returns a data object's size and, where the store has one, its
	// ETag ("" in a directory); one that is not there matches errNotFound.
	stat(ctx context.Context, key string) (size int64, etag string, err error)
	// open reads a data object as a stream; openAt at random.
	open(ctx context.Context, key string) (io.ReadCloser, int64, error)
	openAt(ctx context.Context, key string) (io.ReaderAt, int64, func() error, error)
	// create starts writing a data object, which appears under key only
	// once published (see dataWriter). staged data can be read at random
	// (dataWriter.readerAt) before it is published.
	create(ctx context.Context, key string, contentType string, staged bool) (dataWriter, error)
	// lock takes the lock of shard i (called name) without waiting:
	// false when another process holds it. A store without locks (a
	// bucket) always grants it; locks reports which.
	lock(i int, name string) (unlock func(), ok bool, err error)
	locks() bool
	// sweep removes what writers killed mid-write left behind.
	sweep(ctx context.Context) error
	close() error
}

// reservation is room taken for a later write of one small object.
type reservation interface {
	// commit writes data as the object (atomically, as put does); the
	// reservation is spent.
	commit(ctx context.Context, data []byte) error
	// release gives the room back, unspent.
	release()
}

// dataWriter is a data object being written. Write the bytes, then finish;
// then publish makes it appear under its key (and returns its size and
// ETag as the store has them), or abort drops it: nothing appears.
type dataWriter interface {
	io.Writer
	// finish ends the writing (the bytes are durable, but not under the
	// object's key yet).
	finish() error
	// readerAt reads the finished bytes at random (a staged writer).
	readerAt() (io.ReaderAt, error)
	publish(ctx context.Context) (size int64, etag string, err error)
	abort()
}

// readJSON reads a small JSON object into v.
func readJSON(ctx context.Context, b backend, key string, v any) error {
	data, err := b.read(ctx, key)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

// redactURL is a URL for messages: scheme, host and path, without user or
// query.
func redactURL(raw string) string {
	if !strings.Contains(raw, "://") {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "the destination URL"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// isNotFound reports an object that is not there.
func isNotFound(err error) bool { return errors.Is(err, errNotFound) }
