package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// A minimal Chrome DevTools Protocol client over --remote-debugging-pipe:
// messages are JSON objects separated by NUL bytes, written to the
// browser's fd 3 and read from its fd 4. No websocket, no dependency.

// chromiumFlags start a headless browser that fetches nothing on its own.
var chromiumFlags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-dev-shm-usage", "--remote-debugging-pipe",
}

type cdpMessage struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    any             `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

type browser struct {
	cmd  *exec.Cmd
	in   io.WriteCloser // the browser's fd 3
	done chan struct{}  // the reader ended

	mu      sync.Mutex
	nextID  int64
	waiting map[int64]chan cdpMessage
	events  []string // console errors and exceptions, for failure reports
}

// startBrowser runs chromium with a fresh profile and stops it when the
// test ends.
func startBrowser(t *testing.T, chromium string) *browser {
	t.Helper()
	toBrowser, in, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out, fromBrowser, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{}, chromiumFlags...), "--user-data-dir="+t.TempDir(), "about:blank")
	cmd := exec.Command(chromium, args...)
	cmd.ExtraFiles = []*os.File{toBrowser, fromBrowser} // fd 3 and fd 4
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	toBrowser.Close()
	fromBrowser.Close()
	b := &browser{cmd: cmd, in: in, done: make(chan struct{}), waiting: map[int64]chan cdpMessage{}}
	go b.read(out)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = b.call(ctx, "", "Browser.close", nil)
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		in.Close()
		<-b.done
		out.Close()
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", stderr.String())
		}
	})
	return b
}

func (b *browser) read(r io.Reader) {
	defer close(b.done)
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.waiting {
				close(ch)
				delete(b.waiting, id)
			}
			b.mu.Unlock()
			return
		}
		var m cdpMessage
		if json.Unmarshal(line[:len(line)-1], &m) != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch, ok := b.waiting[m.ID]; ok {
				ch <- m
				delete(b.waiting, m.ID)
			}
		} else if m.Method == "Runtime.exceptionThrown" || m.Method == "Runtime.consoleAPICalled" {
			b.events = append(b.events, m.Method+" "+string(mustJSON(m.Params)))
		}
		b.mu.Unlock()
	}
}

func mustJSON(v any) []byte { out, _ := json.Marshal(v); return out }

// call sends one command (to a page when session is set) and returns its
// result.
func (b *browser) call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpMessage, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	msg, _ := json.Marshal(cdpMessage{ID: id, Method: method, Params: params, SessionID: session})
	if _, err := b.in.Write(append(msg, 0)); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: the browser went away", method)
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		return m.Result, nil
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.waiting, id)
		b.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// page is one tab.
type page struct {
	b       *browser
	session string
}

// openPage opens url in a new tab of size w×h.
func (b *browser) openPage(ctx context.Context, url string, w, h int) (*page, error) {
	res, err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		return nil, err
	}
	var target struct{ TargetID string }
	_ = json.Unmarshal(res, &target)
	if res, err = b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}); err != nil {
		return nil, err
	}
	var att struct{ SessionID string }
	_ = json.Unmarshal(res, &att)
	p := &page{b: b, session: att.SessionID}
	for _, c := range []struct {
		method string
		params any
	}{
		{"Runtime.enable", nil},
		{"Page.enable", nil},
		{"Emulation.setDeviceMetricsOverride", map[string]any{"width": w, "height": h, "deviceScaleFactor": 1, "mobile": false}},
		{"Page.navigate", map[string]any{"url": url}},
	} {
		if _, err := b.call(ctx, p.session, c.method, c.params); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// eval evaluates a JavaScript expression in the page and decodes its value
// into out.
func (p *page) eval(ctx context.Context, expr string, out any) error {
	res, err := p.b.call(ctx, p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	if err != nil {
		return err
	}
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("%s: %s", expr, r.ExceptionDetails.Text)
	}
	if out == nil || len(r.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}

// waitFor evaluates a boolean expression until it is true. An expression
// that throws (the page is still loading) counts as false.
func (p *page) waitFor(ctx context.Context, what, expr string) error {
	var last error
	for {
		var ok bool
		err := p.eval(ctx, "(() => { try { return Boolean("+expr+"); } catch (e) { return false; } })()", &ok)
		if err == nil && ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// typeText types text into the focused element, as a keyboard would.
func (p *page) typeText(ctx context.Context, text string) error {
	for _, r := range text {
		if _, err := p.b.call(ctx, p.session, "Input.insertText", map[string]any{"text": string(r)}); err != nil {
			return err
		}
	}
	return nil
}

// screenshot returns the page as a PNG.
func (p *page) screenshot(ctx context.Context) ([]byte, error) {
	res, err := p.b.call(ctx, p.session, "Page.captureScreenshot", map[string]any{"format": "png"})
	if err != nil {
		return nil, err
	}
	var r struct {
		Data []byte `json:"data"` // base64 in JSON: decoded by encoding/json
	}
	err = json.Unmarshal(res, &r)
	return r.Data, err
}

// lockedBuffer is a bytes buffer safe for the process's writer and the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) < 1<<20 {
		l.buf = append(l.buf, p...)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}
