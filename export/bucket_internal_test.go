package export

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"gocloud.dev/blob/fileblob"
	"gocloud.dev/gcerrors"
)

// codedError is a store's error with its service code, as the S3 SDK's
// API errors carry it.
type codedError struct{ code, msg string }

func (e codedError) Error() string     { return e.msg }
func (e codedError) ErrorCode() string { return e.code }

// TestExisted: a 412 is a lost claim whatever gcerrors.Code makes of it
// (s3blob v0.46 takes a message holding "301", as a request id may, for a
// missing bucket); other errors are not.
func TestExisted(t *testing.T) {
	lost := fmt.Errorf("writing: %w", codedError{"PreconditionFailed", "StatusCode: 412, RequestID: 18E3011, api error PreconditionFailed"})
	if !existed(lost) {
		t.Error("a 412 is not taken for an existing object")
	}
	for _, err := range []error{nil, errors.New("412"), codedError{"NoSuchKey", "301"}} {
		if existed(err) {
			t.Errorf("%v taken for an existing object", err)
		}
	}
}

// TestWriteObjectInADirectoryIsAtomic: writers of one claim through
// separate fileblob buckets on one directory, as separate processes have
// (fileblob's own condition, a stat before a rename, holds only within
// one bucket value): exactly one wins, each time, and the claim holds its
// bytes. A bucket whose temporary files are elsewhere keeps a check.
func TestWriteObjectInADirectoryIsAtomic(t *testing.T) {
	ctx := context.Background()
	for round := range 20 {
		dir := t.TempDir()
		var wins atomic.Int32
		var won atomic.Value
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 8 {
			b, err := OpenBucket(ctx, "file://"+dir)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			wg.Go(func() {
				<-start
				data := []byte(fmt.Sprintf("writer %d\n", i))
				switch err := writeObject(ctx, b, "_claims/00001.json", data, true); {
				case err == nil:
					wins.Add(1)
					won.Store(data)
				case !existed(err):
					t.Errorf("writer %d: %v", i, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d of 8 writers won", round, wins.Load())
		}
		got, err := os.ReadFile(filepath.Join(dir, "_claims", "00001.json"))
		if err != nil || string(got) != string(won.Load().([]byte)) {
			t.Fatalf("round %d: the claim holds %q (%v), its writer wrote %q", round, got, err, won.Load())
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "_claims", "*.tmp")); len(left) != 0 {
			t.Fatalf("round %d: left behind: %v", round, left)
		}
	}
	// Temporary files in $TMPDIR (fileblob's default): a second write is
	// still refused, and nothing is linked into $TMPDIR (a key at the top
	// of the bucket, whose temporary file's name there ends as its own).
	tmp := t.TempDir()
	b, err := fileblob.OpenBucket(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	t.Setenv("TMPDIR", tmp)
	for _, key := range []string{"_claims/00002.json", PlanFile} {
		if err := writeObject(ctx, b, key, []byte("a"), true); err != nil {
			t.Fatal(err)
		}
		if err := writeObject(ctx, b, key, []byte("b"), true); !existed(err) {
			t.Fatalf("%s written twice: %v", key, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Fatalf("in $TMPDIR: %v", left)
	}
}

// TestWriteObjectWithoutHardLinks: on a file system without hard links
// (some FUSE and SMB mounts) a claim is still written, and a second one
// refused, by the check fileblob makes.
func TestWriteObjectWithoutHardLinks(t *testing.T) {
	defer func(l func(string, string) error) { linkFile = l }(linkFile)
	linkFile = func(old, new string) error {
		return &os.LinkError{Op: "link", Old: old, New: new, Err: syscall.EPERM}
	}
	ctx := context.Background()
	dir := t.TempDir()
	b, err := OpenBucket(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := writeObject(ctx, b, "_claims/00003.json", []byte("a\n"), true); err != nil {
		t.Fatal(err)
	}
	if err := writeObject(ctx, b, "_claims/00003.json", []byte("b\n"), true); !existed(err) {
		t.Fatalf("a second claim: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "_claims", "00003.json")); err != nil || string(got) != "a\n" {
		t.Fatalf("%q, %v", got, err)
	}
}

// TestNotFound_S3ErrorsWithThreeOhOne: s3blob (v0.46) reports any S3
// error whose text holds "301" as NotFound, and request ids are random
// hex. An S3 endpoint that answers every request with the same request id,
// holding "301": a refused signature is not a missing plan (nor a shard
// that never ran), and a missing key still is.
func TestNotFound_S3ErrorsWithThreeOhOne(t *testing.T) {
	status, code := http.StatusForbidden, "SignatureDoesNotMatch"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.Header().Set("x-amz-request-id", "18EC2FC2A5195301")
		w.WriteHeader(status)
		if r.Method != http.MethodHead {
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>no</Message><RequestId>18EC2FC2A5195301</RequestId></Error>`, code)
		}
	}))
	defer srv.Close()
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1",
		"AWS_ENDPOINT_URL_S3": srv.URL, "AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull} {
		t.Setenv(k, v)
	}
	ctx := context.Background()
	b, err := OpenBucket(ctx, "s3://bucket/exports?use_path_style=true")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	_, err = ReadBucketPlan(ctx, b)
	if err == nil || gcerrors.Code(err) != gcerrors.NotFound {
		t.Fatalf("s3blob no longer takes a 403 with 301 in its request id for NotFound (%v): this test's premise is gone", err)
	}
	if errors.Is(err, ErrNoPlan) || notFound(err) {
		t.Errorf("a refused signature taken for a missing plan: %v", err)
	}
	_, err = b.Attributes(ctx, "x") // HEAD: no body, the code from the status
	if notFound(err) {
		t.Errorf("a refused HEAD taken for a missing object: %v", err)
	}

	status, code = http.StatusNotFound, "NoSuchKey"
	if _, err := ReadBucketPlan(ctx, b); !errors.Is(err, ErrNoPlan) || !notFound(err) {
		t.Errorf("a missing plan: %v", err)
	}
	if _, err := b.Attributes(ctx, "x"); !notFound(err) {
		t.Errorf("a missing object (HEAD): %v", err)
	}
}
