// Package miniotest starts a MinIO server on loopback for a test: the
// object store the SDK's downloads (the fake keeps its delivery files in it)
// and the export package's bucket destination are tested against. The
// server comes from the binary $LENDGRAPH_MINIO names, else "minio" on the
// PATH; a test is skipped when there is none. Build it with
//
//	go install github.com/minio/minio@latest
//
// (.ci/run builds the pinned version once and sets LENDGRAPH_MINIO).
package miniotest

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// Binary returns the MinIO server binary, or skips the test.
func Binary(t testing.TB) string {
	if bin := os.Getenv("LENDGRAPH_MINIO"); bin != "" {
		return bin
	}
	bin, err := exec.LookPath("minio")
	if err != nil {
		t.Skip("no MinIO server: set LENDGRAPH_MINIO or put minio on the PATH (go install github.com/minio/minio@latest)")
	}
	return bin
}

// Start runs a MinIO server on loopback for the test, with its data in
// a temporary directory, and returns the store the fake should use.
func Start(t testing.TB) lendgraphtest.S3Store {
	bin := Binary(t)
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	store := lendgraphtest.S3Store{Endpoint: "http://" + addr, Bucket: "lendgraph-deliveries",
		AccessKeyID: "lendgraph-test", SecretAccessKey: "lendgraph-test-secret"}
	cmd := exec.Command(bin, "server", dir, "--address", addr, "--quiet")
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+store.AccessKeyID, "MINIO_ROOT_PASSWORD="+store.SecretAccessKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "HOME="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(store.Endpoint + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return store
			}
		}
		select {
		case <-exited:
			t.Fatalf("MinIO exited:\n%s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("MinIO not ready after a minute:\n%s", out.String())
		}
	}
}
