// Package toxitest runs a real Toxiproxy server, as a separate process,
// for the SDK's fault tests: proxies between the client and a loopback
// server, with toxics (latency, bandwidth, reset_peer, limit_data, slicer,
// timeout) driven through Toxiproxy's HTTP API.
//
// The server binary is found in $TOXIPROXY_SERVER, as toxiproxy-server on
// the PATH, or in the user cache directory; when none is there it is built
// once with `go install` from the Go module proxy, so a fresh machine needs
// nothing but Go. Running it out of process keeps Toxiproxy and its
// dependencies out of the SDK's go.mod. A server never outlives its test:
// New stops it at the test's end, and on Linux it dies with the process
// that started it.
package toxitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Version is the Toxiproxy release the tests run.
const Version = "v2.12.0"

// Server is a running toxiproxy-server.
type Server struct {
	// URL is the server's API address, e.g. http://127.0.0.1:41234.
	URL string
	cmd *exec.Cmd
	out bytes.Buffer
	// hc keeps no idle connections: the tests check that no goroutine
	// outlives them.
	hc        *http.Client
	closeOnce sync.Once
}

var buildMu sync.Mutex

// Binary returns the path of a toxiproxy-server binary, building it when
// none is found.
func Binary() (string, error) {
	if p := os.Getenv("TOXIPROXY_SERVER"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("toxiproxy-server"); err == nil {
		return p, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "lendgraph-go", "toxiproxy-"+Version)
	bin := filepath.Join(dir, "toxiproxy-server")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Build into a directory of its own, then rename: test binaries of
	// several packages may build at once.
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("go", "install", "github.com/Shopify/toxiproxy/v2/cmd/server@"+Version)
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("toxitest: building toxiproxy-server %s: %v\n%s", Version, err, out)
	}
	built := filepath.Join(tmp, "server")
	if runtime.GOOS == "windows" {
		built += ".exe"
	}
	if err := os.Rename(built, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// New starts a toxiproxy-server for one test (or benchmark) and stops it
// when the test ends (tb.Cleanup kills it and waits for it to exit). It
// skips tb when no server can be started.
func New(tb testing.TB) *Server {
	tb.Helper()
	s, err := Start()
	if err != nil {
		tb.Skipf("no toxiproxy-server: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Start starts a toxiproxy-server on a free loopback port. The caller stops
// it with Close; on Linux it also dies with the process that started it,
// so that a test binary killed before its cleanup (a go test -timeout
// panic, SIGKILL) leaves no server running.
func Start() (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{URL: "http://127.0.0.1:" + strconv.Itoa(port), hc: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
		s.cmd = exec.Command(bin, "-host", "127.0.0.1", "-port", strconv.Itoa(port))
		s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
		dieWithParent(s.cmd)
		if err := s.cmd.Start(); err != nil {
			return nil, err
		}
		if lastErr = s.waitReady(10 * time.Second); lastErr == nil {
			return s, nil
		}
		s.Close()
	}
	return nil, fmt.Errorf("toxitest: toxiproxy-server did not start: %w", lastErr)
}

func (s *Server) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		resp, err := s.hc.Get(s.URL + "/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer on %s: %v; output: %s", s.URL, err, s.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Close stops the server: it kills the process and waits for it to exit.
// Calling it again does nothing.
func (s *Server) Close() {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.closeOnce.Do(func() {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	})
}

// Proxy is one Toxiproxy proxy.
type Proxy struct {
	s    *Server
	Name string
	// Listen is the address clients connect to (127.0.0.1:port).
	Listen string
}

// NewProxy creates a proxy named name forwarding a free loopback port to
// upstream (host:port).
func (s *Server) NewProxy(name, upstream string) (*Proxy, error) {
	var out struct {
		Listen string `json:"listen"`
	}
	err := s.do(http.MethodPost, "/proxies", map[string]any{"name": name, "listen": "127.0.0.1:0", "upstream": upstream, "enabled": true}, &out)
	if err != nil {
		return nil, err
	}
	return &Proxy{s: s, Name: name, Listen: out.Listen}, nil
}

// AddToxic adds a toxic of the given type ("latency", "bandwidth",
// "reset_peer", "limit_data", "slicer", "timeout", ...) to the stream
// ("downstream": server to client, or "upstream") with its attributes.
func (p *Proxy) AddToxic(kind, stream string, attrs map[string]any) error {
	return p.s.do(http.MethodPost, "/proxies/"+p.Name+"/toxics", map[string]any{"type": kind, "stream": stream, "attributes": attrs}, nil)
}

// Delete removes the proxy, closing its connections.
func (p *Proxy) Delete() error { return p.s.do(http.MethodDelete, "/proxies/"+p.Name, nil, nil) }

func (s *Server) do(method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("toxitest: %s %s: %s: %s", method, path, resp.Status, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("toxitest: not a TCP address")
	}
	return addr.Port, nil
}
