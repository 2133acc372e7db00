package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// meter shows the progress of one phase of a command: a job's rows or a
// download's bytes. On a terminal it is a progress bar; elsewhere plain
// lines on stderr, at most one a second or one every 10%.
type meter interface {
	// set reports done out of total (total <= 0: unknown).
	set(done, total int64)
	// end closes the phase; ok says whether it completed.
	end(ok bool)
}

// newMeter returns the meter for a phase called label; bytes says whether
// it counts bytes (shown with rate and time left) or rows.
func (a *app) newMeter(label string, bytes bool) meter {
	if a.bars {
		return &barMeter{w: a.stderr, label: label, bytes: bytes}
	}
	return &lineMeter{w: a.stderr, label: label, bytes: bytes, json: a.jsonOut, now: time.Now}
}

// barMeter draws a progress bar with github.com/schollz/progressbar; the
// bar is made on the first report, once the total is known.
type barMeter struct {
	w     io.Writer
	label string
	bytes bool
	bar   *progressbar.ProgressBar
	total int64
}

func (m *barMeter) set(done, total int64) {
	if m.bar == nil {
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(m.w),
			progressbar.OptionSetDescription(m.label),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100 * time.Millisecond),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionSetSpinnerChangeInterval(0), // no ticking goroutine
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(m.w) }),
		}
		if m.bytes {
			opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionShowCount())
		} else {
			opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("rows"))
		}
		m.bar = progressbar.NewOptions64(max(total, -1), opts...)
		if total <= 0 {
			m.bar.ChangeMax64(-1)
		}
		m.total = total
	}
	if total > 0 && total != m.total {
		m.bar.ChangeMax64(total)
		m.total = total
	}
	_ = m.bar.Set64(done)
}

func (m *barMeter) end(ok bool) {
	if m.bar == nil {
		return
	}
	if ok {
		_ = m.bar.Finish()
		return
	}
	_ = m.bar.Exit() // keeps the bar where it stopped and ends its line
}

// lineMeter prints plain progress lines (JSON lines with --json).
type lineMeter struct {
	w        io.Writer
	label    string
	bytes    bool
	json     bool
	now      func() time.Time
	start    time.Time
	last     time.Time
	lastTick int64 // the last 10% step printed
	done     int64
	total    int64
	printed  bool
}

func (m *lineMeter) set(done, total int64) {
	now := m.now()
	if m.start.IsZero() {
		m.start = now
	}
	m.done, m.total = done, total
	tick := int64(-1)
	if total > 0 {
		tick = done * 10 / total
	}
	if m.printed && now.Sub(m.last) < time.Second && tick == m.lastTick {
		return
	}
	m.last, m.lastTick = now, tick
	m.print("")
}

func (m *lineMeter) end(ok bool) {
	if !ok {
		if m.printed {
			m.print("stopped")
		}
		return
	}
	if m.printed && m.total > 0 && m.done == m.total {
		return // the last line already says 100%
	}
	m.print("done")
}

func (m *lineMeter) print(state string) {
	m.printed = true
	elapsed := m.now().Sub(m.start)
	if m.json {
		v := map[string]any{"progress": m.label, "done": m.done, "total": m.total}
		if state != "" {
			v["state"] = state
		}
		_ = json.NewEncoder(m.w).Encode(v)
		return
	}
	line := m.label + ": " + m.count(m.done)
	if m.total > 0 {
		line += "/" + m.count(m.total)
	}
	if !m.bytes {
		line += " rows"
	}
	if m.total > 0 {
		line += fmt.Sprintf(" (%d%%)", m.done*100/m.total)
	}
	if m.bytes && elapsed >= time.Second/2 && m.done > 0 && state == "" {
		rate := float64(m.done) / elapsed.Seconds()
		line += ", " + humanBytes(int64(rate)) + "/s"
		if m.total > m.done {
			left := time.Duration(float64(m.total-m.done) / rate * float64(time.Second))
			line += ", " + left.Round(time.Second).String() + " left"
		}
	}
	if state != "" {
		line += ", " + state
	}
	fmt.Fprintln(m.w, line)
}

func (m *lineMeter) count(n int64) string {
	if m.bytes {
		return humanBytes(n)
	}
	return fmt.Sprint(n)
}

// humanBytes formats a byte count with a decimal unit (kB, MB, GB).
func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for x := n / unit; x >= unit; x /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

// countingWriter reports every write's running total to a meter, and
// refuses to write past max bytes (0: no cap).
type countingWriter struct {
	w     io.Writer
	m     meter
	n     int64
	total int64
	max   int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.max > 0 && c.n+int64(len(p)) > c.max {
		size := c.total
		if size <= 0 {
			size = -1 // not declared
		}
		return 0, &lendgraph.DownloadSpaceError{Path: "-", Size: size, MaxBytes: c.max, Free: -1}
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.m.set(c.n, c.total)
	return n, err
}
