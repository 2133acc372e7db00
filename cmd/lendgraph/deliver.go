package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/internal/safefile"
)

var deliveryFormats = []string{"parquet", "csv", "json", "ndjson"}

func (a *app) deliverCommand() *cobra.Command {
	var q queryFlags
	var format, out, jobID string
	var fields []string
	var limit int64
	var cancelOnInterrupt bool
	var connections int
	var maxBytes int64
	cmd := &cobra.Command{
		Use:   "deliver RESOURCE -o FILE",
		Short: "Deliver every matching record of a resource to one file",
		Long: `deliver submits a bulk delivery job for every record of RESOURCE (agents,
originators, companies, loans, properties or branches) that matches the
filters, waits for it, and downloads the file to FILE ("-o -" writes to
stdout). Progress goes to stderr: a bar on a terminal, plain lines elsewhere.

A large file comes down over several connections at once (--connections,
default 8). The bytes go to FILE.part, renamed to FILE when complete; beside
it FILE.part.meta records the job, the file's ETag and the ranges on disk.
The file is checked against the space free where it goes, and against
--max-bytes, before it grows: a delivery too large fails at once.
When the download is interrupted (Ctrl-C, a lost network, a killed
process), FILE.part stays and the same command with --job ID continues from
it. A FILE.part of another job or another file is refused; remove it to
start over.

--job ID re-attaches to a job submitted earlier (for instance after Ctrl-C)
instead of submitting a new one.

Ctrl-C while waiting asks on a terminal whether to cancel the job on the
server; --cancel-on-interrupt cancels without asking; elsewhere the job keeps
running and its id is printed.`,
		Example: `  lendgraph deliver agents --format parquet --filter state=TX -o agents.parquet
  lendgraph deliver loans --format csv --period 2024 --sort mortgageAmount:desc --limit 500 -o loans.csv
  lendgraph deliver agents --job dlv_000007a1b2c3d4 -o agents.parquet   # re-attach (the id "submitted delivery job" printed), or continue a download`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !slices.Contains(deliverable, name) {
				return usagef("no bulk delivery of %q; deliverable resources: %s", name, strings.Join(deliverable, ", "))
			}
			if out == "" {
				return usagef("-o FILE is required (- for stdout)")
			}
			if out == "-" && a.jsonOut {
				return usagef("--json writes its result to stdout; pass -o FILE, not -o -")
			}
			var req *lendgraph.DeliveryRequest
			if jobID == "" {
				if !slices.Contains(deliveryFormats, format) {
					return usagef("--format %q: use one of %s", format, strings.Join(deliveryFormats, ", "))
				}
				flat, adv, period, sort, err := q.parts()
				if err != nil {
					return err
				}
				if limit < 0 {
					return usagef("--limit %d: give 0 for no cap or a number of rows", limit)
				}
				q.blame(a)
				for i, f := range fields {
					a.blameAPI(fmt.Sprintf("fields[%d]", i), "--fields "+f)
				}
				if limit > 0 {
					a.blameAPI("limit", fmt.Sprintf("--limit %d", limit))
				}
				a.blameFlags(cmd, map[string]string{"Limit": "limit", "Format": "format", "Fields": "fields"})
				req = &lendgraph.DeliveryRequest{FlatFilters: flat, AdvancedFilters: adv, Period: period, Sort: sort,
					Format: lendgraph.Format(format), Fields: fields, Limit: limit}
			} else if q.set() || format != "" || len(fields) > 0 || limit != 0 {
				return usagef("--job re-attaches to a submitted job: drop the query flags (--format, --filter, --where, --period, --sort, --fields, --limit)")
			}
			if maxBytes < 0 {
				return usagef("--max-bytes %d: give a number of bytes, or 0 for no cap", maxBytes)
			}
			if cmd.Flags().Changed("connections") {
				a.clientOpts = append(a.clientOpts, lendgraph.WithDownloadConnections(connections))
			}
			c, err := a.clientFor()
			if err != nil {
				return err
			}
			res, _ := resourceOf(c, name)
			d := &delivery{app: a, resource: name, out: out, cancelOnInterrupt: cancelOnInterrupt, maxBytes: maxBytes}
			return d.run(cmd.Context(), res, req, jobID)
		},
	}
	q.register(cmd)
	f := cmd.Flags()
	f.StringVar(&format, "format", "", "file format: parquet, csv, json or ndjson (.ndjson.gz)")
	f.StringSliceVar(&fields, "fields", nil, "deliver only these fields (comma-separated camelCase names)")
	f.Int64Var(&limit, "limit", 0, "deliver at most N rows (the first in sort order); 0: no cap")
	f.StringVarP(&out, "output", "o", "", "write the file here (- for stdout)")
	f.StringVar(&jobID, "job", "", "re-attach to this delivery job instead of submitting")
	f.BoolVar(&cancelOnInterrupt, "cancel-on-interrupt", false, "on Ctrl-C cancel the job on the server without asking")
	f.Int64Var(&maxBytes, "max-bytes", 0, "refuse a file larger than N bytes (0: no cap; the free space is checked either way)")
	f.IntVar(&connections, "connections", lendgraph.DefaultDownloadConnections, "download a large file over up to N connections at once (1: a single connection)")
	return cmd
}

// delivery is one run of the deliver command.
type delivery struct {
	*app
	resource          string
	out               string
	cancelOnInterrupt bool
	maxBytes          int64 // 0: no cap
}

// deliveryResult is deliver's --json output.
type deliveryResult struct {
	JobID          string   `json:"jobId"`
	Resource       string   `json:"resource"`
	Format         string   `json:"format"`
	File           string   `json:"file"`
	Bytes          int64    `json:"bytes"`
	Rows           int64    `json:"rows"`
	CreditsCharged *float64 `json:"creditsCharged,omitempty"`
}

func (d *delivery) run(ctx context.Context, res records, req *lendgraph.DeliveryRequest, jobID string) error {
	toFile := d.out != "-"
	if toFile && jobID == "" {
		// Before submitting: a job is not paid for only to find the file
		// cannot be written.
		if err := checkOutput(d.out, d.resource); err != nil {
			return err
		}
	}

	var job *lendgraph.DeliveryJob[lendgraph.Row]
	var err error
	if jobID != "" {
		job = res.attach(jobID)
		d.say("re-attaching to delivery job %s", jobID)
	} else {
		job, err = res.deliver(ctx, req)
		if err != nil {
			return err
		}
		d.say("submitted delivery job %s: about %d %s as %s (re-attach with --job %s)", job.ID, job.EstimatedTotal, d.resource, job.Format, job.ID)
	}

	m := d.newMeter("delivery job "+job.ID, false)
	st, err := job.Wait(ctx, lendgraph.WithProgress(func(s *lendgraph.DeliveryStatus) {
		m.set(s.Processed, s.EstimatedTotal)
	}))
	m.end(err == nil)
	if err != nil {
		if ctx.Err() != nil {
			return d.interrupted(job)
		}
		return err
	}

	m = d.newMeter("download", true)
	var n int64
	switch {
	case toFile:
		n, err = job.DownloadFile(ctx, d.out, lendgraph.WithProgress(func(p *lendgraph.DownloadProgress) { m.set(p.Done, p.Total) }), lendgraph.WithMaxDownloadBytes(d.maxBytes))
	case d.maxBytes > 0 && st.Bytes > d.maxBytes:
		err = &lendgraph.DownloadSpaceError{Path: "-", Size: st.Bytes, MaxBytes: d.maxBytes, Free: -1}
	default:
		n, err = job.Download(ctx, &countingWriter{w: d.stdout, m: m, total: st.Bytes, max: d.maxBytes})
	}
	m.end(err == nil)
	if err != nil {
		again := fmt.Sprintf("lendgraph deliver %s --job %s -o %s", d.resource, job.ID, d.out)
		var de *lendgraph.DownloadError
		var space *lendgraph.DownloadSpaceError
		switch {
		case errors.As(err, &space):
			return d.noRoom(space, job.ID)
		case ctx.Err() != nil && toFile:
			return &interruptedError{fmt.Sprintf("download interrupted; %s.part keeps what came down; continue with: %s", d.out, again)}
		case ctx.Err() != nil:
			return &interruptedError{fmt.Sprintf("download interrupted; delivery job %s is complete: download it again with: %s", job.ID, again)}
		case toFile && errors.As(err, &de) && de.Written > 0:
			return fmt.Errorf("%w\n%s.part keeps what came down; continue with: %s", err, d.out, again)
		}
		return err
	}
	r := deliveryResult{JobID: job.ID, Resource: d.resource, Format: string(st.Format), File: d.out, Bytes: n, Rows: st.Processed, CreditsCharged: st.CreditsCharged}
	if st.ChargedCount != nil {
		r.Rows = *st.ChargedCount
	}
	if d.jsonOut {
		return d.writeJSONLine(r)
	}
	charged := ""
	if r.CreditsCharged != nil {
		charged = fmt.Sprintf(", %s credits charged", number(*r.CreditsCharged))
	}
	d.say("wrote %s: %d rows, %s%s", d.out, r.Rows, humanBytes(n), charged)
	return nil
}

// noRoom says why a delivery's file was refused before it grew, in the
// command's own terms, and how to go on.
func (d *delivery) noRoom(e *lendgraph.DownloadSpaceError, job string) error {
	size := "a file of unknown size"
	if e.Size >= 0 {
		size = fmt.Sprintf("a file of %s (%d bytes)", humanBytes(e.Size), e.Size)
	}
	again := fmt.Sprintf("lendgraph deliver %s --job %s -o FILE", d.resource, job)
	if e.MaxBytes > 0 {
		return fmt.Errorf("--max-bytes %d: delivery job %s is %s, over the cap; nothing was written. Raise --max-bytes and download it with: %s",
			e.MaxBytes, job, size, again)
	}
	return fmt.Errorf("-o %s: delivery job %s is %s, and the file system there has %s free; nothing was written. Free some space, or download it elsewhere with: %s",
		d.out, job, size, humanBytes(e.Free), again)
}

// checkOutput makes sure a new delivery can be written to path: its
// directory takes a new file, and no interrupted download waits in
// path.part (that one is continued with --job, or removed).
func checkOutput(path, resource string) error {
	part := path + ".part"
	if _, err := os.Stat(part); err == nil {
		job := "ID"
		var rec struct {
			Job string `json:"job"`
		}
		if b, err := os.ReadFile(part + ".meta"); err == nil && json.Unmarshal(b, &rec) == nil && rec.Job != "" {
			job = rec.Job
		}
		return usagef("%s holds an interrupted download; continue it with: lendgraph deliver %s --job %s -o %s (or remove %s to start a new delivery)",
			part, resource, job, path, part)
	}
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	_ = f.Close()
	return os.Remove(part)
}

// openOutput opens path.part for writing (stdout for "-"): a new file of
// mode 0600, never written through a link planted at that name (a regular
// file of the user's left there is replaced; anything else is refused).
// commit gives it the mode of a new file, closes it and renames it to
// path; discard (safe after commit) removes it.
func openOutput(a *app, path string) (w io.Writer, commit func() error, discard func(), err error) {
	if path == "-" {
		return a.stdout, func() error { return nil }, func() {}, nil
	}
	part := path + ".part"
	f, err := safefile.Recreate(part)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("-o %s: %w", path, err)
	}
	done := false
	commit = func() error {
		done = true
		err := safefile.Publish(f, part, path)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(part)
			return fmt.Errorf("-o %s: %w", path, err)
		}
		return nil
	}
	discard = func() {
		if !done {
			_ = f.Close()
			_ = os.Remove(part)
		}
	}
	return f, commit, discard, nil
}

// interrupted handles Ctrl-C while waiting for the job: cancel it on the
// server when asked to (or when the person says so), else say how to
// re-attach.
func (d *delivery) interrupted(job *lendgraph.DeliveryJob[lendgraph.Row]) error {
	reattach := fmt.Sprintf("lendgraph deliver %s --job %s -o %s", d.resource, job.ID, d.out)
	return interruptJobs(d.app, d.cancelOnInterrupt, "delivery job "+job.ID, reattach,
		func(ctx context.Context) error { _, err := job.Cancel(ctx); return err })
}

// interruptJobs decides what happens to server jobs (named what) when the
// wait for them is interrupted: cancelled with --cancel-on-interrupt or when
// the person answers yes on a terminal, else left running. reattach is the
// command that picks them up again ("" when there is none).
func interruptJobs(a *app, cancelFlag bool, what, reattach string, cancel func(context.Context) error) error {
	if a.interactive && !cancelFlag {
		cancelFlag = a.confirm(fmt.Sprintf("Interrupted. Cancel %s on the server?", what))
	}
	if !cancelFlag {
		msg := "interrupted; " + what + " keeps running on the server"
		if reattach != "" {
			msg += "; re-attach with: " + reattach
		}
		return &interruptedError{msg}
	}
	// ctx is done: the cancel call gets a context of its own.
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	err := cancel(ctx)
	switch {
	case errors.Is(err, lendgraph.ErrJobFinished):
		msg := "interrupted; " + what + " had already finished"
		if reattach != "" {
			msg += "; download it with: " + reattach
		}
		return &interruptedError{msg}
	case err != nil:
		return &interruptedError{fmt.Sprintf("interrupted; cancelling %s failed: %v", what, err)}
	}
	return &interruptedError{"interrupted; cancelled " + what}
}
