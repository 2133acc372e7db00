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
func Start(t testing.TB) lendgraphtest.S3Store { return StartServer(t).Store }

// Server is a MinIO server of a test, which the test may restart.
type Server struct {
	// Store is the server's address and credentials.
	Store lendgraphtest.S3Store

	t              testing.TB
	bin, dir, addr string
	cmd            *exec.Cmd
	exited         chan struct{}
	out            bytes.Buffer
}

// StartServer is Start, for a test that restarts the server.
func StartServer(t testing.TB) *Server {
	s := &Server{t: t, bin: Binary(t), dir: t.TempDir()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	ln.Close()
	s.Store = lendgraphtest.S3Store{Endpoint: "http://" + s.addr, Bucket: "lendgraph-deliveries",
		AccessKeyID: "lendgraph-test", SecretAccessKey: "lendgraph-test-secret"}
	t.Cleanup(s.kill)
	s.start()
	return s
}

// Restart kills the server (SIGKILL: no clean shutdown) and starts it
// again on the same address and data, once ready.
func (s *Server) Restart() {
	s.t.Helper()
	s.kill()
	s.start()
}

func (s *Server) kill() {
	if s.cmd != nil {
		_ = s.cmd.Process.Kill()
		<-s.exited
		s.cmd = nil
	}
}

func (s *Server) start() {
	t := s.t
	t.Helper()
	cmd := exec.Command(s.bin, "server", s.dir, "--address", s.addr, "--quiet")
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+s.Store.AccessKeyID, "MINIO_ROOT_PASSWORD="+s.Store.SecretAccessKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "HOME="+s.dir)
	s.out.Reset()
	cmd.Stdout, cmd.Stderr = &s.out, &s.out
	// A restart may find the port still held for a moment.
	for range 50 {
		ln, err := net.Listen("tcp", s.addr)
		if err == nil {
			ln.Close()
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", s.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(s.Store.Endpoint + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exited:
			t.Fatalf("MinIO exited:\n%s", s.out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("MinIO not ready after a minute:\n%s", s.out.String())
		}
	}
}
