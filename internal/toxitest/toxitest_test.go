package toxitest

import (
	"io"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestProxy_Latency: a proxy forwards to its upstream, a latency toxic
// delays the answer, and once the proxy is deleted and the server closed
// no goroutine of the package is left.
func TestProxy_Latency(t *testing.T) {
	if _, err := Binary(); err != nil {
		t.Skipf("no toxiproxy-server: %v", err)
	}
	defer goleak.VerifyNone(t)
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello"))
			_ = c.Close()
		}
	}()

	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.NewProxy("latency", up.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AddToxic("latency", "downstream", map[string]any{"latency": 200}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c, err := net.Dial("tcp", p.Listen)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	_ = c.Close()
	if err != nil || string(b) != "hello" {
		t.Fatalf("through the proxy: %q, %v", b, err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("answer after %v through a 200 ms latency toxic", d)
	}
	if err := p.Delete(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_ = up.Close()
	<-done
}
