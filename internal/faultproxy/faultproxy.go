// Package faultproxy is a loopback HTTP forward proxy that tests put
// between a client and the fake (API, storage and search host alike: the
// client's transport sends every request through it). For each request a
// script picks a fault, so a test can fault the first attempt of a call
// and pass the retry, or fault a random tenth of all attempts. The fake
// behind it counts what reached it.
package faultproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// Proxy is the proxy (see the package doc).
type Proxy struct {
	t      testing.TB
	srv    *httptest.Server
	up     *http.Transport
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	script func(r *http.Request, n int) Fault // n: 0-based number of the request
	n      int
	faults map[string]int // by kind, what was applied
}

// Fault is what the proxy does to one request.
type Fault struct {
	Kind  string        // see the constants
	Delay time.Duration // stalls and trickles
}

// The faults. "before" faults never reach the fake; "after" faults are
// applied once the fake has answered (it acted).
const (
	Pass            = ""
	StallHead       = "stall before headers (after the fake answered)"
	StallBody       = "stall mid-body"
	Trickle         = "trickle the body"
	ResetBefore     = "reset before forwarding"
	ResetAfter      = "reset after the fake answered"
	CutBody         = "cut the body in half"
	Unavailable     = "503 from the proxy (not forwarded)"
	BadGatewayAfter = "502 after the fake answered"
	TooManyRequests = "429 Retry-After 0 (not forwarded)"
)

// New starts a proxy that lives until t ends.
func New(t testing.TB) *Proxy {
	p := &Proxy{t: t, up: &http.Transport{MaxIdleConnsPerHost: 64}, faults: map[string]int{}}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		p.cancel() // ends every stall
		p.srv.CloseClientConnections()
		p.srv.Close()
		p.up.CloseIdleConnections()
	})
	return p
}

// SetScript makes fn pick each request's fault (nil: pass everything).
func (p *Proxy) SetScript(fn func(r *http.Request, n int) Fault) {
	p.mu.Lock()
	p.script, p.n = fn, 0
	p.mu.Unlock()
}

// Counts returns how many times each fault was applied.
func (p *Proxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := map[string]int{}
	for k, v := range p.faults {
		m[k] = v
	}
	return m
}

// Transport returns a client transport that sends every request through p.
func (p *Proxy) Transport() *http.Transport {
	u, _ := url.Parse(p.srv.URL)
	return &http.Transport{Proxy: http.ProxyURL(u), MaxIdleConnsPerHost: 64}
}

// Client returns a client of srv whose requests go through p.
func (p *Proxy) Client(srv *lendgraphtest.Server, opts ...lendgraph.Option) *lendgraph.Client {
	tr := p.Transport()
	p.t.Cleanup(tr.CloseIdleConnections)
	base := []lendgraph.Option{lendgraph.WithHTTPClient(&http.Client{Transport: tr}),
		lendgraph.WithRetryBackoff(time.Millisecond, 10*time.Millisecond)}
	return srv.Client(append(base, opts...)...)
}

// wait sleeps for d, or until the client went away or the proxy closes.
func (p *Proxy) wait(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-p.ctx.Done():
	}
	return false
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	f := Fault{}
	if p.script != nil {
		f = p.script(r, p.n)
	}
	p.n++
	if f.Kind != Pass {
		p.faults[f.Kind]++
	}
	p.mu.Unlock()

	switch f.Kind {
	case ResetBefore:
		resetConn(w)
		return
	case Unavailable:
		http.Error(w, `{"error":"proxy: upstream unavailable"}`, http.StatusServiceUnavailable)
		return
	case TooManyRequests:
		w.Header().Set("Retry-After", "0")
		http.Error(w, `{"error":"proxy: slow down"}`, http.StatusTooManyRequests)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Header.Del("Proxy-Connection")
	resp, err := p.up.RoundTrip(out)
	if err != nil {
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		resetConn(w)
		return
	}
	switch f.Kind {
	case ResetAfter:
		resetConn(w)
		return
	case BadGatewayAfter:
		http.Error(w, `{"error":"proxy: upstream timed out"}`, http.StatusBadGateway)
		return
	case StallHead:
		if !p.wait(r, f.Delay) {
			return
		}
	case CutBody:
		writeRaw(w, resp, body, len(body)/2, 0, nil)
		return
	case StallBody:
		writeRaw(w, resp, body, len(body)/2, f.Delay, p.wait)
		return
	case Trickle:
		writeTrickle(w, r, resp, body, f.Delay, p.wait)
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// resetConn closes the client's connection with a TCP reset, no answer.
func resetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	c, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// writeRaw frames the response by hand on the hijacked connection: the
// headers (announcing the whole length) and the first half bytes of body;
// then, when stall is set, it waits for stall and writes the rest;
// otherwise it closes the connection there.
func writeRaw(w http.ResponseWriter, resp *http.Response, body []byte, half int, stall time.Duration, wait func(*http.Request, time.Duration) bool) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	c, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	h := resp.Header.Clone()
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Connection", "close")
	h.Del("Transfer-Encoding")
	var head bytes.Buffer
	fmt.Fprintf(&head, "HTTP/1.1 %d %s\r\n", resp.StatusCode, http.StatusText(resp.StatusCode))
	_ = h.Write(&head)
	head.WriteString("\r\n")
	_, _ = buf.Write(head.Bytes())
	_, _ = buf.Write(body[:half])
	if buf.Flush() != nil || wait == nil {
		return
	}
	// The client going away shows as a read error on the hijacked conn.
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		_, _ = io.Copy(io.Discard, c)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-gone:
			cancel()
		case <-ctx.Done():
		}
	}()
	if wait((&http.Request{}).WithContext(ctx), stall) {
		_, _ = buf.Write(body[half:])
		_ = buf.Flush()
	}
	cancel()
	_ = c.Close()
	<-gone
}

// writeTrickle sends the body in 64 pieces, delay apart.
func writeTrickle(w http.ResponseWriter, r *http.Request, resp *http.Response, body []byte, delay time.Duration, wait func(*http.Request, time.Duration) bool) {
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	fl, _ := w.(http.Flusher)
	step := max(len(body)/64, 1)
	for len(body) > 0 {
		k := min(step, len(body))
		if _, err := w.Write(body[:k]); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
		body = body[k:]
		if len(body) > 0 && !wait(r, delay) {
			return
		}
	}
}

// FirstN faults the first n requests whose method and path match (path
// may end in * to match a prefix) with f, and passes everything else.
func FirstN(method, path string, n int, f Fault) func(*http.Request, int) Fault {
	var mu sync.Mutex
	left := n
	return func(r *http.Request, _ int) Fault {
		if r.Method != method || !pathMatch(path, r.URL.Path) {
			return Fault{}
		}
		mu.Lock()
		defer mu.Unlock()
		if left == 0 {
			return Fault{}
		}
		left--
		return f
	}
}

func pathMatch(pattern, p string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(p, prefix)
	}
	return p == pattern
}
