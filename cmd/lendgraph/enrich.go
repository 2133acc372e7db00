package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

func (a *app) enrichCommand() *cobra.Command {
	var idsFrom, out string
	var refresh, yes, cancelOnInterrupt bool
	cmd := &cobra.Command{
		Use:   "enrich --ids FILE -o FILE",
		Short: "Enrich properties with their owners in bulk",
		Long: `enrich reads property ids (one a line; blank lines and lines starting with #
are skipped; --ids - reads stdin), shows the worst-case cost (one credit a
property, as if every one matched: billing is per match and cache hits are
free unless --refresh), asks for confirmation, submits one job per 50,000
ids, waits, and writes one JSON line a property to FILE (written as
FILE.part, renamed when complete).

On a terminal it asks before submitting; elsewhere, or when the ids come
from stdin, --yes is required. A balance too low for the worst case ends
with exit code 3 and the balance against the cost.`,
		Example: `  lendgraph enrich --ids property-ids.txt -o owners.ndjson
  cut -f1 props.tsv | lendgraph enrich --ids - --yes -o owners.ndjson`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if idsFrom == "" {
				return usagef("--ids FILE is required (- for stdin)")
			}
			if out == "" {
				return usagef("-o FILE is required (- for stdout)")
			}
			if out == "-" && a.jsonOut {
				return usagef("--json writes its result to stdout; pass -o FILE, not -o -")
			}
			if !yes && idsFrom == "-" {
				return usagef("the ids come from stdin, so there is no way to ask for confirmation: pass --yes to submit")
			}
			if !yes && !a.interactive {
				return usagef("not on a terminal, so there is no way to ask for confirmation: pass --yes to submit")
			}
			ids, err := a.readIDs(idsFrom)
			if err != nil {
				return err
			}
			c, err := a.clientFor()
			if err != nil {
				return err
			}
			a.blameFlags(cmd, map[string]string{"ids": "ids"})
			plan, err := c.Properties.PlanEnrichBulk(ids, &lendgraph.EnrichBulkRequest{Refresh: refresh})
			if err != nil {
				return err
			}
			billing := "billed per match; cache hits are free"
			if refresh {
				billing = "billed per match; --refresh charges cache hits too"
			}
			a.say("%d properties in %d job(s): worst case %d credits (%s)", plan.Properties, len(plan.Batches), plan.WorstCaseCost, billing)
			if !yes && !a.confirm("Submit?") {
				return errors.New("not confirmed; nothing was submitted")
			}
			return a.enrich(cmd.Context(), plan, out, cancelOnInterrupt)
		},
	}
	f := cmd.Flags()
	f.StringVar(&idsFrom, "ids", "", "file of property ids, one a line (- for stdin)")
	f.StringVarP(&out, "output", "o", "", "write the results here as ndjson (- for stdout)")
	f.BoolVar(&refresh, "refresh", false, "bypass the cache: every match is charged")
	f.BoolVarP(&yes, "yes", "y", false, "submit without asking")
	f.BoolVar(&cancelOnInterrupt, "cancel-on-interrupt", false, "on Ctrl-C cancel the jobs on the server without asking")
	return cmd
}

// readIDs reads property ids, one a line.
func (a *app) readIDs(from string) ([]string, error) {
	var r io.Reader = a.stdin
	if from != "-" {
		f, err := os.Open(from)
		if err != nil {
			return nil, usagef("--ids: %v", err)
		}
		defer f.Close()
		r = f
	}
	var ids []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		id := strings.TrimSpace(sc.Text())
		if id != "" && !strings.HasPrefix(id, "#") {
			ids = append(ids, id)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--ids: %w", err)
	}
	if len(ids) == 0 {
		return nil, usagef("--ids %s holds no property ids", from)
	}
	return ids, nil
}

// enrichResult is enrich's --json output.
type enrichResult struct {
	Jobs         []string `json:"jobs"`
	File         string   `json:"file"`
	Properties   int64    `json:"properties"`
	Succeeded    int64    `json:"succeeded"`
	Failed       int64    `json:"failed"`
	FromCache    int64    `json:"fromCache"`
	ChargedCount int64    `json:"chargedCount"`
}

func (a *app) enrich(ctx context.Context, plan *lendgraph.EnrichPlan, out string, cancelOnInterrupt bool) error {
	dst, commit, discard, err := openOutput(a, out)
	if err != nil {
		return err
	}
	defer discard()
	batch, err := plan.Submit(ctx)
	ids := make([]string, 0, len(plan.Batches))
	for _, j := range batch.Jobs {
		ids = append(ids, j.ID)
	}
	if err != nil {
		if len(ids) > 0 {
			a.say("jobs already submitted keep running: %s", strings.Join(ids, ", "))
		}
		return err
	}
	a.say("submitted enrichment job(s) %s", strings.Join(ids, ", "))

	m := a.newMeter("enrichment", false)
	sts, err := batch.Wait(ctx, lendgraph.WithProgress(func(s *lendgraph.EnrichJobStatus) {
		m.set(s.Handled(), s.Total)
	}))
	m.end(err == nil)
	if err != nil {
		if ctx.Err() != nil {
			return interruptJobs(a, cancelOnInterrupt, "enrichment job(s) "+strings.Join(ids, ", "), "",
				func(ctx context.Context) error {
					var errs []error
					for _, j := range batch.Jobs {
						if _, err := j.Cancel(ctx); err != nil && !errors.Is(err, lendgraph.ErrJobFinished) {
							errs = append(errs, err)
						}
					}
					return errors.Join(errs...)
				})
		}
		return err
	}

	bw := bufio.NewWriterSize(dst, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, j := range batch.Jobs {
		for e, err := range j.ResultRows(ctx) {
			if err != nil {
				return err
			}
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if err := commit(); err != nil {
		return err
	}
	r := enrichResult{Jobs: ids, File: out}
	for _, s := range sts {
		r.Properties += s.Total
		r.Succeeded += s.Succeeded
		r.Failed += s.Failed
		r.FromCache += s.FromCache
		r.ChargedCount += s.ChargedCount
	}
	if a.jsonOut {
		return a.writeJSONLine(r)
	}
	a.say("wrote %s: %d properties: %d looked up, %d from the cache, %d failed; %d charged",
		out, r.Properties, r.Succeeded, r.FromCache, r.Failed, r.ChargedCount)
	return nil
}
