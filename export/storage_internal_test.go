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

// TestDirExclusivePutIsAtomic: writers of one claim through separate
// storages on one directory, as separate processes have: exactly one wins,
// each time, the claim holds its bytes, and no temporary file is left.
func TestDirExclusivePutIsAtomic(t *testing.T) {
	ctx := context.Background()
	for round := range 20 {
		dir := t.TempDir()
		var wins atomic.Int32
		var won atomic.Value
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 8 {
			st, err := Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			wg.Go(func() {
				<-start
				data := []byte(fmt.Sprintf("writer %d\n", i))
				switch err := st.b.put(ctx, "_claims/00001.json", data, true); {
				case err == nil:
					wins.Add(1)
					won.Store(data)
				case !errors.Is(err, errExists):
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
		if left, _ := filepath.Glob(filepath.Join(dir, "_claims", ".*")); len(left) != 0 {
			t.Fatalf("round %d: left behind: %v", round, left)
		}
	}
}

// TestDirExclusivePutWithoutHardLinks: on a file system without hard links
// (some FUSE and SMB mounts) a claim is still written exclusively, and a
// second one refused.
func TestDirExclusivePutWithoutHardLinks(t *testing.T) {
	defer func(l func(*os.Root, string, string) error) { linkFile = l }(linkFile)
	linkFile = func(_ *os.Root, old, new string) error {
		return &os.LinkError{Op: "link", Old: old, New: new, Err: syscall.EPERM}
	}
	ctx := context.Background()
	dir := t.TempDir()
	st, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.b.put(ctx, "_claims/00003.json", []byte("a\n"), true); err != nil {
		t.Fatal(err)
	}
	if err := st.b.put(ctx, "_claims/00003.json", []byte("b\n"), true); !errors.Is(err, errExists) {
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
	st, err := Open(ctx, "s3://bucket/exports?use_path_style=true")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := st.b.(*bucketBackend).b

	_, err = ReadPlan(ctx, st)
	if err == nil || gcerrors.Code(err) != gcerrors.NotFound {
		t.Fatalf("s3blob no longer takes a 403 with 301 in its request id for NotFound (%v): this test's premise is gone", err)
	}
	if errors.Is(err, ErrNoPlan) || isNotFound(err) {
		t.Errorf("a refused signature taken for a missing plan: %v", err)
	}
	_, err = b.Attributes(ctx, "x") // HEAD: no body, the code from the status
	if notFound(err) {
		t.Errorf("a refused HEAD taken for a missing object: %v", err)
	}

	status, code = http.StatusNotFound, "NoSuchKey"
	if _, err := ReadPlan(ctx, st); !errors.Is(err, ErrNoPlan) || !isNotFound(err) {
		t.Errorf("a missing plan: %v", err)
	}
	if _, err := b.Attributes(ctx, "x"); !notFound(err) {
		t.Errorf("a missing object (HEAD): %v", err)
	}
}
