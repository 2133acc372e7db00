package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

var deliveryFormats = []string{"parquet", "csv", "json", "ndjson"}

func (a *app) deliverCommand() *cobra.Command {
	var q queryFlags
	var format, out, jobID string
	var fields []string
	var limit int64
	var cancelOnInterrupt bool
	cmd := &cobra.Command{
		Use:   "deliver RESOURCE -o FILE",
		Short: "Deliver every matching record of a resource to one file",
		Long: `deliver submits a bulk delivery job for every record of RESOURCE (agents,
originators, companies, loans, properties or branches) that matches the
filters, waits for it, and downloads the file to FILE (written as FILE.part,
renamed when complete; "-o -" writes to stdout). Progress goes to stderr: a
bar on a terminal, plain lines elsewhere.

--job ID re-attaches to a job submitted earlier (for instance after Ctrl-C)
instead of submitting a new one.

Ctrl-C while waiting asks on a terminal whether to cancel the job on the
server; --cancel-on-interrupt cancels without asking; elsewhere the job keeps
running and its id is printed.`,
		Example: `  lendgraph deliver agents --format parquet --filter state=TX -o agents.parquet
  lendgraph deliver loans --format csv --period 2024 --sort mortgageAmount:desc --limit 500 -o loans.csv
  lendgraph deliver agents --job dlv_000007a1b2c3d4 -o agents.parquet   # re-attach: the id "submitted delivery job" printed`,
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
					return usagef("--format must be one of %s", strings.Join(deliveryFormats, ", "))
				}
				flat, adv, period, sort, err := q.parts()
				if err != nil {
					return err
				}
				if limit < 0 {
					return usagef("--limit must be >= 0")
				}
				req = &lendgraph.DeliveryRequest{FlatFilters: flat, AdvancedFilters: adv, Period: period, Sort: sort,
					Format: lendgraph.Format(format), Fields: fields, Limit: limit}
			} else if q.set() || format != "" || len(fields) > 0 || limit != 0 {
				return usagef("--job re-attaches to a submitted job: drop the query flags (--format, --filter, --where, --period, --sort, --fields, --limit)")
			}
			c, err := a.clientFor()
			if err != nil {
				return err
			}
			res, _ := resourceOf(c, name)
			d := &delivery{app: a, resource: name, out: out, cancelOnInterrupt: cancelOnInterrupt}
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
	return cmd
}

// delivery is one run of the deliver command.
type delivery struct {
	*app
	resource          string
	out               string
	cancelOnInterrupt bool
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
	// Open the output before submitting: a job is not paid for only to
	// find the file cannot be written.
	dst, commit, discard, err := openOutput(d.app, d.out)
	if err != nil {
		return err
	}
	defer discard()

	var job *lendgraph.DeliveryJob[lendgraph.Row]
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
	cw := &countingWriter{w: dst, m: m, total: st.Bytes}
	n, err := job.Download(ctx, cw)
	m.end(err == nil)
	if err != nil {
		if ctx.Err() != nil {
			return &interruptedError{fmt.Sprintf("download interrupted; delivery job %s is complete: download it again with: lendgraph deliver %s --job %s -o %s", job.ID, d.resource, job.ID, d.out)}
		}
		return err
	}
	if err := commit(); err != nil {
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

// openOutput opens path.part for writing (stdout for "-"); commit closes it
// and renames it to path; discard (safe after commit) removes it.
func openOutput(a *app, path string) (w io.Writer, commit func() error, discard func(), err error) {
	if path == "-" {
		return a.stdout, func() error { return nil }, func() {}, nil
	}
	part := path + ".part"
	f, err := os.Create(part)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("output: %w", err)
	}
	done := false
	commit = func() error {
		done = true
		if err := f.Close(); err != nil {
			_ = os.Remove(part)
			return fmt.Errorf("output: %w", err)
		}
		if err := os.Rename(part, path); err != nil {
			_ = os.Remove(part)
			return fmt.Errorf("output: %w", err)
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
