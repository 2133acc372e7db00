package lendgraphtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"
)

// FaultKind is what an injected fault does to a request.
type FaultKind int

const (
	// Respond answers with Status, Header and Body instead of the real handler.
	Respond FaultKind = iota
	// DropBeforeResponse closes the connection without answering.
	DropBeforeResponse
	// DropMidBody sends the real response's headers and half its body, then
	// closes the connection.
	DropMidBody
	// Stall waits Delay (or until the client goes away) before answering
	// normally: headers that never come, as far as a client with a shorter
	// timeout can tell.
	Stall
	// Trickle sends the real response one byte per Delay.
	Trickle
	// Throttle sends the real response at Rate bytes a second: a slow
	// connection (each matching request is one), as object stores cap them.
	Throttle
)

// Fault is a failure a test arms for the next requests matching a route.
type Fault struct {
	Kind   FaultKind
	Status int
	Header map[string]string
	Body   string
	// Delay is the stall before answering (Stall) or between bytes (Trickle).
	Delay time.Duration
	// Rate is the bytes a second of a Throttle.
	Rate int64
	// Times is how many matching requests get the fault (0 means 1, -1 every one).
	Times int
	// Stream, for Respond, repeats Body until Stream bytes were written
	// (-1: until the client goes away or the server closes), streamed
	// without holding it in memory: a 1 GB or never-ending error body.
	Stream int64
}

type faultRule struct {
	method string
	route  routePattern
	fault  Fault
	left   int
}

// InjectFault arms f for the next requests whose method matches (empty for
// any) and whose path matches pattern. It applies on every listener: API,
// storage and search host. Rules are tried in the order they were added.
//
// A pattern is written as the docs write routes, "/v1/agents/{id}": a
// segment {name} matches any one segment and a last segment {name...}
// matches the rest of the path. path.Match syntax works too
// ("/v1/properties/*/enrich", "/v1/[al]*"), and "" matches every path.
// A method or pattern that can never match a request (a lower-case
// method, a pattern without the leading slash, a full URL, a method
// written into the pattern, malformed glob or braces) panics with a
// message saying what to write instead, rather than arming a fault that
// never fires.
func (s *Server) InjectFault(method, pattern string, f Fault) {
	rp := mustRoute("InjectFault", method, pattern)
	s.mu.Lock()
	s.armLocked(method, rp, f)
	s.mu.Unlock()
}

// armLocked adds a fault rule (s.mu held).
func (s *Server) armLocked(method string, rp routePattern, f Fault) {
	left := f.Times
	if left == 0 {
		left = 1
	}
	s.faults = append(s.faults, &faultRule{method: method, route: rp, fault: f, left: left})
}

// ClearFaults disarms every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

func (s *Server) takeFaultLocked(method, p string) *Fault {
	for i, r := range s.faults {
		if r.method != "" && r.method != method {
			continue
		}
		if !r.route.match(p) {
			continue
		}
		f := r.fault
		if r.left > 0 {
			r.left--
			if r.left == 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
		}
		return &f
	}
	return nil
}

func (s *Server) applyFault(w http.ResponseWriter, r *http.Request, f *Fault, h http.Handler) {
	switch f.Kind {
	case Respond:
		for k, v := range f.Header {
			w.Header().Set(k, v)
		}
		status := f.Status
		if status == 0 {
			status = http.StatusInternalServerError
		}
		w.WriteHeader(status)
		if f.Stream != 0 {
			s.streamBody(w, r, f)
			return
		}
		_, _ = w.Write([]byte(f.Body))
	case DropBeforeResponse:
		hijackClose(w)
	case Throttle:
		h.ServeHTTP(&throttledWriter{ResponseWriter: w, rate: max(f.Rate, 1), req: r.Context(), srv: s.ctx}, r)
	case Stall:
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		}
		h.ServeHTTP(w, r)
	case DropMidBody, Trickle:
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		conn, buf, ok := hijack(w)
		if !ok {
			return
		}
		defer conn.Close()
		// Frame the response by hand: an explicit Content-Length makes a
		// cut body an unexpected EOF for the client (not a clean end), and
		// Connection: close stops it reusing the connection we close.
		h := rec.Result().Header.Clone()
		h.Set("X-Request-Id", w.Header().Get("X-Request-Id"))
		h.Set("Content-Length", strconv.Itoa(len(body)))
		h.Set("Connection", "close")
		h.Del("Transfer-Encoding")
		var head bytes.Buffer
		fmt.Fprintf(&head, "HTTP/1.1 %d %s\r\n", rec.Code, http.StatusText(rec.Code))
		_ = h.Write(&head)
		head.WriteString("\r\n")
		_, _ = buf.Write(head.Bytes())
		if f.Kind == DropMidBody {
			_, _ = buf.Write(body[:len(body)/2])
			_ = buf.Flush()
			return
		}
		for _, b := range body {
			_ = buf.WriteByte(b)
			if buf.Flush() != nil {
				return
			}
			select {
			case <-time.After(f.Delay):
			case <-s.ctx.Done():
				return
			}
		}
		_ = buf.Flush()
	}
}

// streamBody writes f.Body over and over until f.Stream bytes were written,
// forever when f.Stream is negative, stopping when the client goes away.
func (s *Server) streamBody(w http.ResponseWriter, r *http.Request, f *Fault) {
	chunk := []byte(f.Body)
	if len(chunk) == 0 {
		chunk = []byte("x")
	}
	for len(chunk) < 32<<10 {
		chunk = append(chunk, chunk...)
	}
	left := f.Stream
	for left != 0 {
		b := chunk
		if left > 0 && int64(len(b)) > left {
			b = b[:left]
		}
		if _, err := w.Write(b); err != nil || r.Context().Err() != nil || s.ctx.Err() != nil {
			return
		}
		if left > 0 {
			left -= int64(len(b))
		}
	}
}

// throttledWriter writes at most rate bytes a second, in slices of 50ms,
// until the client goes away or the server closes.
type throttledWriter struct {
	http.ResponseWriter
	rate     int64
	req, srv context.Context
	start    time.Time
	sent     int64
}

func (t *throttledWriter) Write(p []byte) (int, error) {
	if t.start.IsZero() {
		t.start = time.Now()
	}
	slice := max(int(t.rate/20), 1)
	n := 0
	for n < len(p) {
		k := min(slice, len(p)-n)
		w, err := t.ResponseWriter.Write(p[n : n+k])
		n += w
		t.sent += int64(w)
		if err != nil {
			return n, err
		}
		if f, ok := t.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		due := t.start.Add(time.Duration(float64(t.sent) / float64(t.rate) * float64(time.Second)))
		select {
		case <-time.After(time.Until(due)):
		case <-t.req.Done():
			return n, t.req.Err()
		case <-t.srv.Done():
			return n, t.srv.Err()
		}
	}
	return n, nil
}

// Unwrap gives http.ResponseController the writer underneath.
func (t *throttledWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

func hijack(w http.ResponseWriter) (conn interface{ Close() error }, buf *bufio.ReadWriter, ok bool) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return nil, nil, false
	}
	c, rw, err := hj.Hijack()
	if err != nil {
		return nil, nil, false
	}
	return c, rw, true
}

func hijackClose(w http.ResponseWriter) {
	if c, _, ok := hijack(w); ok {
		_ = c.Close()
	}
}
