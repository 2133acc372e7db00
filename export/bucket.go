package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// The objects of an export in a bucket, beside the data files (all off the
// part-* glob, and skipped by Spark, which skips names starting with _):
const (
	// PlanFile is the plan the tasks of an export share. Run writes it
	// (only if absent) and refuses a bucket that holds another plan.
	PlanFile = "_plan.json"
	// claimsDir holds a claim a shard: written only when absent before the
	// shard's submit, rewritten with the job id right after the answer.
	claimsDir = "_claims/"
	// recordsDir holds a record a shard (<n>.json: job, rows, bytes,
	// sha256, charge, the data object's ETag) and the digest of its ids
	// (<n>.ids), written once its data object landed and checked out.
	recordsDir = "_shards/"
	// stagingDir holds a parquet file while it is checked, before it is
	// copied to its final name (parquet is decoded at random, so it is
	// checked from the store, not while it streams).
	stagingDir = "_staging/"
)

// ioTimeout bounds each small read or write of the export's own objects
// (plan, claims, records). They are made with the run's context detached
// from its cancellation, so that a job id is recorded even after ctx ended.
const ioTimeout = 30 * time.Second

// OpenBucket opens the object store destination named by a URL, with the
// drivers the program registered by importing them (gocloud.dev/blob/s3blob
// for s3://, gcsblob for gs://, azureblob for azblob://, fileblob for
// file://); this package registers none, so that a program pays only for
// the stores it uses. The URL's path is the export's prefix inside the
// bucket: s3://bucket/exports/agents is the bucket "bucket" under
// "exports/agents/". Other query parameters are the driver's (for S3:
// region, endpoint, use_path_style; see gocloud.dev/blob/s3blob). A file://
// URL is a directory, as fileblob opens it. Credentials come from the
// store's standard chains (for S3: the AWS environment variables, shared
// config and credentials files, and the instance's role); a URL that holds
// a user or password is refused, and no error repeats the URL's query. A
// file:// directory is created when missing, written without fileblob's
// sidecar files of attributes (metadata=skip), which Spark would read as
// data, and with each file's temporary file beside it (no_tmp_dir), so
// that a directory on another file system than $TMPDIR works.
func OpenBucket(ctx context.Context, rawURL string) (*blob.Bucket, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" {
		return nil, invalid("url", "%q is not a URL like s3://bucket/prefix", redactURL(rawURL))
	}
	if u.User != nil {
		return nil, invalid("url", "%s holds credentials; give them through the store's own settings (for S3: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile), never in the URL", redactURL(rawURL))
	}
	if u.Host == "" && u.Scheme != "file" && u.Scheme != "mem" {
		return nil, invalid("url", "%q names no bucket; use %s://bucket/prefix", redactURL(rawURL), u.Scheme)
	}
	if u.Scheme == "file" {
		// A directory like an export directory: created when missing, and
		// no sidecar file of attributes beside each data file (Spark would
		// read it as data).
		q := u.Query()
		if q.Get("metadata") == "" {
			q.Set("metadata", "skip")
		}
		if q.Get("create_dir") == "" {
			q.Set("create_dir", "true")
		}
		// fileblob writes into a temporary file that it renames into
		// place: in $TMPDIR unless told otherwise, and a rename from
		// another file system (a tmpfs /tmp, a mounted volume) fails
		// with "invalid cross-device link". Beside the final file it
		// is on the same one.
		if q.Get("no_tmp_dir") == "" {
			q.Set("no_tmp_dir", "true")
		}
		u.RawQuery = q.Encode()
	} else if u.Scheme != "mem" {
		if p := strings.Trim(u.Path, "/"); p != "" {
			q := u.Query()
			q.Set("prefix", path.Join(q.Get("prefix"), p)+"/")
			u.RawQuery, u.Path = q.Encode(), ""
		}
	}
	b, err := blob.OpenBucket(ctx, u.String())
	if err != nil {
		// The driver's message repeats the URL it was given, query and
		// all (an endpoint may hold a user and password): it is reworded,
		// not wrapped. Opening fails only on the URL's settings, which
		// the message names; there is nothing else to branch on.
		return nil, fmt.Errorf("export: opening %s: %s", redactURL(rawURL), queryInText.ReplaceAllString(err.Error(), "?…$1"))
	}
	return b, nil
}

// queryInText is a URL's query in a message: whatever follows a '?' up to
// the next space (a colon before it, the message's own, is kept).
var queryInText = regexp.MustCompile(`\?\S+?(:?(?:\s|$))`)

// redactURL is a URL for messages: scheme, host and path, without user or
// query.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the destination URL"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// shardKey is the name of a shard's claim or record: its index in the plan,
// so that names stay short and free of the partition values' characters.
func shardKey(dir string, i int, ext string) string {
	return fmt.Sprintf("%s%05d%s", dir, i, ext)
}

// errClaimed is a claim another task wrote first.
var errClaimed = errors.New("export: another task claimed the shard first")

// bucketStore keeps the state of an export in a bucket, with no lock: a
// shard's claim object (its ShardStatus while it is submitted) is created
// only when absent, so two tasks never both submit it, and its record
// object (its ShardStatus once landed) says it is done. It satisfies the
// same calls of the runner as the directory's manifest store.
type bucketStore struct {
	b     *blob.Bucket
	ctx   context.Context // the run's, without its cancellation
	plan  *Plan
	index map[string]int

	// targets are the shards this run works on (nil: all): refresh reads
	// only their claims and records, and takes the others' state from the
	// listing, so a task of one shard does not read the whole export.
	targets map[string]bool

	mu      sync.Mutex
	st      map[string]*ShardStatus
	claimed map[string]bool // a claim object exists (as last seen or written)
}

// openBucketStore writes the plan to the bucket when absent (a conditional
// write: of two tasks, one writes it and the other compares), and refuses
// a bucket with another plan. The shards' state is read as they are
// claimed (claim) and at the end of the run (refresh).
func openBucketStore(ctx context.Context, b *blob.Bucket, plan *Plan) (*bucketStore, error) {
	s := &bucketStore{b: b, ctx: context.WithoutCancel(ctx), plan: plan, index: map[string]int{},
		st: map[string]*ShardStatus{}, claimed: map[string]bool{}}
	for i, sh := range plan.Shards {
		s.index[sh.Name] = i
		s.st[sh.Name] = &ShardStatus{Name: sh.Name, State: StatePending, File: sh.File}
	}
	have, err := ReadBucketPlan(ctx, b)
	switch {
	case errors.Is(err, ErrNoPlan):
		data, err := json.MarshalIndent(plan, "", "  ")
		if err != nil {
			return nil, err
		}
		err = writeObject(ctx, b, PlanFile, append(data, '\n'), true)
		if existed(err) {
			return openBucketStore(ctx, b, plan) // another task wrote it first: compare
		}
		if err != nil {
			return nil, fmt.Errorf("export: writing %s: %w", PlanFile, err)
		}
	case err != nil:
		return nil, err
	case have.fingerprint() != plan.fingerprint():
		return nil, &PlanMismatchError{Dir: "the bucket", Want: have.describe(), Got: plan.describe()}
	}
	return s, nil
}

// ErrNoPlan is the error of ReadBucketPlan for a bucket without PlanFile.
var ErrNoPlan = errors.New("export: the bucket holds no " + PlanFile)

// ReadBucketPlan reads the plan of an export in a bucket (PlanFile). For a
// bucket without one, errors.Is(err, ErrNoPlan) (and gcerrors.Code(err) is
// gcerrors.NotFound); any other failure to read it is not ErrNoPlan.
func ReadBucketPlan(ctx context.Context, b *blob.Bucket) (*Plan, error) {
	data, err := readObject(ctx, b, PlanFile)
	if notFound(err) {
		return nil, fmt.Errorf("%w: %w", ErrNoPlan, err)
	}
	if err != nil {
		return nil, fmt.Errorf("export: reading %s: %w", PlanFile, err)
	}
	return parsePlan(PlanFile, data)
}

// WriteBucket stores the plan in the bucket as PlanFile, for the tasks of
// an orchestrator to share (Run writes it too when it is absent). A plan
// already there is left as it is when it is the same plan, and is a
// *PlanMismatchError when it is another.
func (p *Plan) WriteBucket(ctx context.Context, b *blob.Bucket) error {
	_, err := openBucketStore(ctx, b, p)
	return err
}

func readObject(ctx context.Context, b *blob.Bucket, key string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	return b.ReadAll(ctx, key)
}

// writeObject writes a small object whole; ifNotExist makes the write
// conditional (S3 If-None-Match: *, GCS ifGenerationMatch=0): it fails
// with gcerrors.FailedPrecondition when the object exists.
//
// fileblob's own condition is a stat before a rename, which two processes
// can both pass. In a directory opened by OpenBucket (whose temporary
// files are beside their final names) the write is made conditional here
// instead: the data is written into the temporary file, which is then
// hard-linked to the final name, which only one writer can create (and
// which a reader never sees without its data); the rename that ends the
// write then finds both names on one file and leaves it in place. A
// fileblob bucket that writes its temporary files elsewhere, or a file
// system without hard links, keeps a check of the kind fileblob makes.
func writeObject(ctx context.Context, b *blob.Bucket, key string, data []byte, ifNotExist bool) error {
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	opts := &blob.WriterOptions{ContentType: "application/json", IfNotExist: ifNotExist}
	linked := false // data is under its final name already
	if ifNotExist && isDirectory(b) {
		opts.IfNotExist = false
		opts.BeforeWrite = func(as func(any) bool) error {
			var f *os.File
			final := ""
			if as(&f) {
				final = fileblobTemporary.ReplaceAllString(f.Name(), "")
			}
			var err error
			// Beside its final name (the key's path inside the bucket's
			// directory), not in $TMPDIR, where fileblob writes unless
			// told otherwise: a key at the top of the bucket could not
			// tell one from the other by its path alone.
			beside := final != "" && strings.HasSuffix(filepath.ToSlash(final), "/"+key) &&
				filepath.Dir(f.Name()) != filepath.Clean(os.TempDir())
			if beside {
				if _, err = f.Write(data); err == nil {
					err = linkFile(f.Name(), final)
				}
				linked = err == nil
			}
			// A file system without hard links (some FUSE and SMB
			// mounts) gets the check fileblob would make, and its data
			// through the writer.
			if !beside || err != nil && !errors.Is(err, fs.ErrExist) {
				err = nil
				if beside { // the data goes through the writer instead
					if err = f.Truncate(0); err == nil {
						_, err = f.Seek(0, io.SeekStart)
					}
				}
				if err == nil {
					var ok bool
					if ok, err = b.Exists(ctx, key); ok {
						err = fs.ErrExist
					}
				}
			}
			if err != nil && f != nil {
				// fileblob leaves its temporary file when this fails.
				_ = f.Close()
				_ = os.Remove(f.Name())
			}
			return err
		}
	}
	w, err := b.NewWriter(ctx, key, opts)
	if err != nil {
		return err
	}
	if !linked {
		if _, err := w.Write(data); err != nil {
			cancel() // the write is abandoned, not renamed into place
			_ = w.Close()
			return err
		}
	}
	return w.Close()
}

// isDirectory reports a bucket of fileblob, a directory: of the drivers,
// it alone answers As with an *os.FileInfo.
func isDirectory(b *blob.Bucket) bool {
	var fi os.FileInfo
	return b.As(&fi)
}

// fileblobTemporary is the name fileblob gives a file while it writes it
// beside its final name (OpenBucket's no_tmp_dir): the name, a dot, the
// time in nanoseconds in hex, ".tmp".
var fileblobTemporary = regexp.MustCompile(`\.[0-9a-f]+\.tmp$`)

// linkFile is os.Link; tests replace it with a file system that has no
// hard links.
var linkFile = os.Link

// existed reports a conditional write refused because the object exists
// (HTTP 412). gcerrors.Code says so as gcerrors.FailedPrecondition, except
// that s3blob (v0.46) takes any error whose message holds "301" for a
// missing bucket, and a 412's request id may hold it: the service's own
// error code is checked too.
func existed(err error) bool {
	if err == nil {
		return false
	}
	code, _ := serviceCode(err)
	return gcerrors.Code(err) == gcerrors.FailedPrecondition || code == "PreconditionFailed" ||
		errors.Is(err, fs.ErrExist) // writeObject's link in a directory
}

// notFound reports an object (or bucket) that is not there. gcerrors.Code
// says so as gcerrors.NotFound, but s3blob (v0.46) says so too for any
// error whose message holds "301", taken for a redirect to a bucket's
// region, and a request id may hold it (a refused signature, a 503: about
// one MinIO error in fifty, with its 16-digit request id and 64-digit
// host id): where the error carries the service's own code, that code
// must say not found as well.
func notFound(err error) bool {
	if gcerrors.Code(err) != gcerrors.NotFound {
		return false
	}
	code, ok := serviceCode(err)
	if !ok {
		return true
	}
	switch code {
	case "NoSuchKey", "NoSuchBucket", "NotFound", "ObjectNotInActiveTierError":
		return true
	}
	return false
}

// serviceCode is the store's own code for err, where err carries one (the
// S3 SDK's API errors do).
func serviceCode(err error) (string, bool) {
	var coded interface{ ErrorCode() string }
	if errors.As(err, &coded) {
		return coded.ErrorCode(), true
	}
	return "", false
}

// load reads the shard's record, else its claim: its state as the bucket
// says.
func (s *bucketStore) load(name string) (ShardStatus, bool, error) {
	i := s.index[name]
	var st ShardStatus
	data, err := readObject(s.ctx, s.b, shardKey(recordsDir, i, ".json"))
	if err == nil {
		if err := json.Unmarshal(data, &st); err != nil {
			return st, false, fmt.Errorf("export: the record of shard %s: %w", name, err)
		}
		st.State = StateLanded
		return st, true, nil
	}
	if !notFound(err) {
		return st, false, fmt.Errorf("export: reading the record of shard %s: %w", name, err)
	}
	data, err = readObject(s.ctx, s.b, shardKey(claimsDir, i, ".json"))
	switch {
	case notFound(err):
		sh := s.plan.Shards[i]
		return ShardStatus{Name: sh.Name, State: StatePending, File: sh.File}, false, nil
	case err != nil:
		return st, false, fmt.Errorf("export: reading the claim of shard %s: %w", name, err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, true, fmt.Errorf("export: the claim of shard %s: %w", name, err)
	}
	return st, true, nil
}

// claim reads the shard's state from the bucket. There is no lock: it
// always returns true, and the submit's conditional claim is what keeps
// two tasks from both submitting.
func (s *bucketStore) claim(name string) (bool, error) {
	st, exists, err := s.load(name)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st[name] = &st
	s.claimed[name] = exists // a landed shard's claim stays
	return true, nil
}

func (s *bucketStore) release(string) {}

func (s *bucketStore) get(name string) ShardStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.st[name]
}

// update changes a shard's state and writes it: a landed shard's record;
// the claim of a shard being submitted or submitted (created only when
// absent: errClaimed when another task's is there); no claim for a shard
// that failed or was cancelled (no job charges it), so that a later run
// claims it afresh.
func (s *bucketStore) update(name string, fn func(*ShardStatus)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st[name]
	old := *st
	fn(st)
	i := s.index[name]
	switch st.State {
	case StateLanded:
		data, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return err
		}
		if err := writeObject(s.ctx, s.b, shardKey(recordsDir, i, ".json"), append(data, '\n'), false); err != nil {
			return fmt.Errorf("export: writing the record of shard %s: %w", name, err)
		}
	case StateSubmitting, StateSubmitted:
		data, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return err
		}
		err = writeObject(s.ctx, s.b, shardKey(claimsDir, i, ".json"), append(data, '\n'), !s.claimed[name])
		if existed(err) {
			*st = old
			return errClaimed
		}
		if err != nil {
			return fmt.Errorf("export: writing the claim of shard %s: %w", name, err)
		}
		s.claimed[name] = true
	default: // failed, cancelled, pending: no job holds the shard
		if !s.claimed[name] {
			return nil
		}
		ctx, cancel := context.WithTimeout(s.ctx, ioTimeout)
		defer cancel()
		if err := s.b.Delete(ctx, shardKey(claimsDir, i, ".json")); err != nil && !notFound(err) {
			return fmt.Errorf("export: releasing the claim of shard %s: %w", name, err)
		}
		s.claimed[name] = false
	}
	return nil
}

// refresh reads the state of every shard: the records and claims the
// bucket lists, each read.
func (s *bucketStore) refresh() error {
	records, err := s.list(recordsDir, ".json")
	if err != nil {
		return err
	}
	claims, err := s.list(claimsDir, ".json")
	if err != nil {
		return err
	}
	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 8)
		mu   sync.Mutex
		errs []error
	)
	for i, sh := range s.plan.Shards {
		if !records[i] && !claims[i] || s.targets != nil && !s.targets[sh.Name] {
			st := &ShardStatus{Name: sh.Name, State: StatePending, File: sh.File}
			switch {
			case records[i]:
				st.State = StateLanded
			case claims[i]:
				st.State = StateSubmitted // or submitting: another task's
			}
			s.mu.Lock()
			s.st[sh.Name] = st
			s.mu.Unlock()
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := s.claim(sh.Name); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// list returns the shard indexes that have an object under dir with ext.
func (s *bucketStore) list(dir, ext string) (map[int]bool, error) {
	keys, err := listKeys(s.ctx, s.b, dir)
	if err != nil {
		return nil, fmt.Errorf("export: listing %s: %w", dir, err)
	}
	out := map[int]bool{}
	for _, key := range keys {
		var i int
		if _, err := fmt.Sscanf(strings.TrimPrefix(key, dir), "%05d"+ext, &i); err == nil && i < len(s.plan.Shards) {
			out[i] = true
		}
	}
	return out, nil
}

// listKeys lists the keys under prefix. In a directory a listing fails
// with NotFound when a file it met is gone before it read its attributes:
// a writer's temporary file renamed into place (they are beside their
// final names). Such a listing starts again, a few times.
func listKeys(ctx context.Context, b *blob.Bucket, prefix string) ([]string, error) {
	for attempt := 1; ; attempt++ {
		var keys []string
		it := b.List(&blob.ListOptions{Prefix: prefix})
		for {
			obj, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				return keys, nil
			}
			if notFound(err) && attempt < 5 {
				break
			}
			if err != nil {
				return nil, err
			}
			if !obj.IsDir {
				keys = append(keys, obj.Key)
			}
		}
	}
}

func (s *bucketStore) snapshot() Manifest {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := Manifest{Version: PlanVersion, Plan: s.plan}
	for _, sh := range s.plan.Shards {
		m.Shards = append(m.Shards, *s.st[sh.Name])
	}
	return m
}
