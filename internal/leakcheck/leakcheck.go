// Package leakcheck finds goroutines left running by a test: the checks
// the SDK's tests make after every package (VerifyTestMain) and around
// single tests (VerifyNone, Find). It replaces go.uber.org/goleak so that
// no test-only module reaches the requirements of programs that import
// the SDK.
package leakcheck

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Option adjusts which goroutines count as leaks.
type Option func(*config)

type config struct {
	ignore  []func(g goroutine) bool
	timeout time.Duration
}

// IgnoreCurrent ignores the goroutines running when it is called.
func IgnoreCurrent() Option {
	ids := map[int]bool{}
	for _, g := range goroutines() {
		ids[g.id] = true
	}
	return func(c *config) { c.ignore = append(c.ignore, func(g goroutine) bool { return ids[g.id] }) }
}

// IgnoreTopFunction ignores goroutines whose innermost frame is fn
// (a fully qualified name, e.g. "net/http.(*persistConn).readLoop").
func IgnoreTopFunction(fn string) Option {
	return func(c *config) {
		c.ignore = append(c.ignore, func(g goroutine) bool { return len(g.funcs) > 0 && g.funcs[0] == fn })
	}
}

// IgnoreAnyFunction ignores goroutines with fn anywhere on their stack.
func IgnoreAnyFunction(fn string) Option {
	return func(c *config) {
		c.ignore = append(c.ignore, func(g goroutine) bool { return slices.Contains(g.funcs, fn) })
	}
}

// MaxWait sets how long Find waits for goroutines to end (default 5s).
func MaxWait(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// goroutine is one parsed stack of runtime.Stack(all).
type goroutine struct {
	id    int
	state string
	funcs []string // innermost first, without arguments; "created by" excluded
	text  string
}

// Find returns an error listing the goroutines still running, other than
// the caller's, the testing package's and the runtime's, after waiting up
// to the MaxWait for them to end.
func Find(opts ...Option) error {
	c := config{timeout: 5 * time.Second}
	for _, o := range opts {
		o(&c)
	}
	deadline := time.Now().Add(c.timeout)
	delay := time.Millisecond
	for {
		leaks := c.leaks()
		if len(leaks) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			fmt.Fprintf(&b, "found %d unexpected goroutines:\n", len(leaks))
			for _, g := range leaks {
				b.WriteString(g.text + "\n\n")
			}
			return fmt.Errorf("%s", strings.TrimSpace(b.String()))
		}
		time.Sleep(delay)
		delay = min(2*delay, 100*time.Millisecond)
	}
}

func (c *config) leaks() []goroutine {
	self := currentID()
	var out []goroutine
	for _, g := range goroutines() {
		if g.id == self || standard(g) || slices.ContainsFunc(c.ignore, func(f func(goroutine) bool) bool { return f(g) }) {
			continue
		}
		out = append(out, g)
	}
	return out
}

// standard reports the goroutines of the testing package, signal handling,
// tracing and cgo, which are not the code's to stop.
func standard(g goroutine) bool {
	if len(g.funcs) == 0 {
		return true
	}
	switch g.funcs[0] {
	case "testing.RunTests", "testing.(*T).Run", "testing.(*T).Parallel", "testing.runFuzzing", "testing.runFuzzTests":
		return strings.HasPrefix(g.state, "chan receive")
	case "os/signal.signal_recv", "os/signal.loop", "runtime.ReadTrace":
		return true
	}
	return slices.Contains(g.funcs, "runtime.goexit") && strings.HasPrefix(g.state, "syscall")
}

// VerifyNone fails t when goroutines are left running (see Find).
func VerifyNone(t testing.TB, opts ...Option) {
	t.Helper()
	if err := Find(opts...); err != nil {
		t.Error(err)
	}
}

// VerifyTestMain runs the package's tests and then fails the run when
// goroutines are left running. Use it as TestMain.
func VerifyTestMain(m *testing.M, opts ...Option) {
	code := m.Run()
	if code == 0 {
		if err := Find(opts...); err != nil {
			fmt.Fprintf(os.Stderr, "leakcheck: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func goroutines() []goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutine
	for _, block := range bytes.Split(buf, []byte("\n\n")) {
		if g, ok := parse(string(block)); ok {
			out = append(out, g)
		}
	}
	return out
}

// parse reads "goroutine N [state]:" followed by function and file lines.
func parse(block string) (goroutine, bool) {
	lines := strings.Split(strings.TrimSpace(block), "\n")
	head, ok := strings.CutPrefix(lines[0], "goroutine ")
	if !ok {
		return goroutine{}, false
	}
	idText, rest, _ := strings.Cut(head, " ")
	id, err := strconv.Atoi(idText)
	if err != nil {
		return goroutine{}, false
	}
	state := strings.TrimSuffix(strings.TrimPrefix(rest, "["), "]:")
	g := goroutine{id: id, state: state, text: block}
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "created by ") {
			continue
		}
		if i := strings.LastIndex(l, "("); i > 0 && strings.HasSuffix(l, ")") {
			l = l[:i]
		}
		g.funcs = append(g.funcs, l)
	}
	return g, true
}

func currentID() int {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	head, _ := strings.CutPrefix(string(buf), "goroutine ")
	idText, _, _ := strings.Cut(head, " ")
	id, _ := strconv.Atoi(idText)
	return id
}
