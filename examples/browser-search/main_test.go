package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

var screenshotTo = flag.String("screenshot", "", "write the page's screenshot to this PNG file (e.g. screenshot.png)")

// chromium finds a Chromium or Chrome binary: $LENDGRAPH_CHROMIUM, else
// the usual names on $PATH.
func chromium() string {
	if p := os.Getenv("LENDGRAPH_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// startBrowser starts headless Chromium through chromedp, with a fresh
// profile that chromedp removes, fetching nothing on its own, and returns
// the context of its first tab; the browser is stopped when the test ends,
// its output logged if the test failed. Console messages and uncaught
// exceptions of the page are collected for failure reports.
func startBrowser(t *testing.T, bin string) (context.Context, *pageLog) {
	t.Helper()
	var output lockedBuffer
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.CombinedOutput(&output),
	)
	ctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc() // waits for the browser to exit and its profile to be removed
		if t.Failed() {
			t.Logf("chromium output:\n%s", output.String())
		}
	})
	log := &pageLog{}
	chromedp.ListenTarget(ctx, log.record)
	return ctx, log
}

// pageLog keeps the page's console messages and uncaught exceptions.
type pageLog struct {
	mu     sync.Mutex
	events []string
}

// record is the event listener: it runs on chromedp's reading goroutine,
// so it only appends.
func (l *pageLog) record(ev any) {
	var line string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		line = "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			line += " " + ev.ExceptionDetails.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		line = "console." + string(ev.Type) + ":"
		for _, a := range ev.Args {
			if a.Value != nil {
				line += " " + string(a.Value)
			} else {
				line += " " + a.Description
			}
		}
	default:
		return
	}
	l.mu.Lock()
	l.events = append(l.events, line)
	l.mu.Unlock()
}

func (l *pageLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.events, "\n")
}

// eval evaluates a JavaScript expression in the page (awaiting a promise)
// and decodes its value into out (nil: the value is dropped).
func eval(ctx context.Context, expr string, out any) error {
	return chromedp.Run(ctx, chromedp.Evaluate(expr, out, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	}))
}

// waitFor polls a boolean expression until it is true, every 100ms, until
// ctx ends. An expression that throws (the page is still loading) counts
// as false.
func waitFor(ctx context.Context, what, expr string) error {
	var ok bool
	err := chromedp.Run(ctx, chromedp.Poll("(() => { try { return Boolean("+expr+"); } catch (e) { return false; } })()", &ok,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(0)))
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// typeText types text into the focused element, a key at a time, as a
// keyboard would.
func typeText(ctx context.Context, text string) error {
	return chromedp.Run(ctx, chromedp.KeyEvent(text))
}

// TestBrowserSearch drives the page in headless Chromium: it types a
// query, sees hits from the search host (another origin, through CORS),
// and keeps the page open until the search token has been renewed, then
// searches again with the new token.
func TestBrowserSearch(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("Chromium is not installed (apt-get install chromium, or set LENDGRAPH_CHROMIUM): skipping the browser check")
	}
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(2000))
	const ttl = 8 * time.Second
	srv.SetSearchTokenTTL(ttl)
	c := srv.Client()
	var tokenFetches atomic.Int32
	h := newHandler(c)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/search-token" {
			tokenFetches.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	defer app.Close()

	browser, log := startBrowser(t, bin)
	ctx, cancel := context.WithTimeout(browser, 60*time.Second)
	defer cancel()
	fail := func(err error) {
		t.Helper()
		var status string
		_ = eval(ctx, `document.getElementById("status").textContent`, &status)
		t.Fatalf("%v\npage status: %q\nbrowser events:\n%s", err, status, log)
	}
	if err := chromedp.Run(ctx, chromedp.EmulateViewport(960, 620), chromedp.Navigate(app.URL+"/")); err != nil {
		fail(err)
	}
	if err := waitFor(ctx, "the first token", `document.body.dataset.ready === "1"`); err != nil {
		fail(err)
	}
	if err := eval(ctx, `document.getElementById("q").focus()`, nil); err != nil {
		fail(err)
	}
	if err := typeText(ctx, "smi"); err != nil {
		fail(err)
	}
	if err := waitFor(ctx, "hits for smi", `document.body.dataset.query === "smi" && document.querySelectorAll("#originators li").length > 0`); err != nil {
		fail(err)
	}
	var first []string
	if err := eval(ctx, `[...document.querySelectorAll("#originators li mark")].map(m => m.textContent)`, &first); err != nil {
		fail(err)
	}
	if len(first) == 0 || !strings.EqualFold(first[0], "smi") {
		fail(fmt.Errorf("highlighted matches %q, want Smi", first))
	}
	var tokens string
	if _ = eval(ctx, `document.body.dataset.tokens`, &tokens); tokens != "1" {
		fail(fmt.Errorf("%s tokens before any expiry, want 1", tokens))
	}

	// The page stays open past the token's lifetime: it fetches the next
	// token before the first expires, and searches with it.
	renew, cancelRenew := context.WithTimeout(ctx, ttl+5*time.Second)
	defer cancelRenew()
	if err := waitFor(renew, "a renewed token", `Number(document.body.dataset.tokens) >= 2`); err != nil {
		fail(err)
	}
	if err := typeText(ctx, "th"); err != nil {
		fail(err)
	}
	if err := waitFor(ctx, "hits for smith", `document.body.dataset.query === "smith" && document.querySelectorAll("#originators li").length > 0`); err != nil {
		fail(err)
	}
	var pageErr string
	if err := eval(ctx, `document.body.dataset.error ?? ""`, &pageErr); err != nil || pageErr != "" {
		fail(fmt.Errorf("the page reported an error: %q (%v)", pageErr, err))
	}

	// What the search host saw: cross-origin requests from the page's
	// origin, preflighted, with two different search tokens and never the
	// API key.
	key := srv.DefaultCaller().Key
	bearers := map[string]bool{}
	preflights, searches := 0, 0
	for _, r := range srv.Requests() {
		if r.Listener != "search" {
			continue
		}
		if r.Header.Get("Origin") != app.URL {
			fail(fmt.Errorf("search host request %s %s from origin %q, want %s", r.Method, r.Path, r.Header.Get("Origin"), app.URL))
		}
		for _, vs := range r.Header {
			for _, v := range vs {
				if strings.Contains(v, key) {
					fail(fmt.Errorf("the API key reached the search host"))
				}
			}
		}
		switch r.Method {
		case http.MethodOptions:
			preflights++
		case http.MethodPost:
			searches++
			bearers[r.Header.Get("Authorization")] = true
		}
	}
	if preflights == 0 || searches < 2 || len(bearers) < 2 {
		fail(fmt.Errorf("search host saw %d preflights, %d searches with %d tokens", preflights, searches, len(bearers)))
	}
	if n := tokenFetches.Load(); n < 2 {
		fail(fmt.Errorf("%d token fetches", n))
	}

	// A new query over the old one: both indexes answer (the screenshot).
	if err := eval(ctx, `document.getElementById("q").select()`, nil); err != nil {
		fail(err)
	}
	if err := typeText(ctx, "su"); err != nil {
		fail(err)
	}
	if err := waitFor(ctx, "hits for su", `document.body.dataset.query === "su" && document.querySelectorAll("#originators li").length > 0 && document.querySelectorAll("#companies li").length > 0`); err != nil {
		fail(err)
	}
	var shot []byte
	if err := chromedp.Run(ctx, chromedp.CaptureScreenshot(&shot)); err != nil {
		fail(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil || img.Bounds().Dx() != 960 {
		fail(fmt.Errorf("screenshot: %v", err))
	}
	if *screenshotTo != "" {
		if err := os.WriteFile(*screenshotTo, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunServesThePage runs the program's server against the fake and
// fetches the page and a token.
func TestRunServesThePage(t *testing.T) {
	t.Setenv(lendgraph.EnvAPIKey, "")
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncWriter{ch: make(chan string, 8)}
	done := make(chan error, 1)
	go func() { done <- run(ctx, "127.0.0.1:0", out) }()
	var url string
	for url == "" {
		select {
		case line := <-out.ch:
			if u, ok := strings.CutPrefix(line, "Open "); ok {
				url = strings.Fields(u)[0]
			}
		case err := <-done:
			t.Fatalf("run ended: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("no address printed")
		}
	}
	for path, want := range map[string]string{"": "<title>LendGraph search</title>", "search-token": `"token":"lgs_`, "app.js": "fetchToken"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(buf.String(), want) {
			t.Fatalf("GET /%s: %d %.200s", path, resp.StatusCode, buf.String())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// syncWriter hands each write to the test as a line.
type syncWriter struct{ ch chan string }

func (w *syncWriter) Write(p []byte) (int, error) {
	select {
	case w.ch <- string(p):
	default:
	}
	return len(p), nil
}

// lockedBuffer is a bytes buffer safe for the browser's output and the test.
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
