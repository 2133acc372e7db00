package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	lendgraphotel "github.com/lendgraph/lendgraph-go/otel"
)

// exportFlags are the export command's own flags.
type exportFlags struct {
	q              queryFlags
	by             []string
	out            string
	format         string
	fields         []string
	concurrency    int
	planOnly       bool
	planFrom       string
	shards         []string
	yes            bool
	maxRows        int64
	values         []string
	includeMissing bool
	creditsPerRow  float64
	allowEmpty     bool
	resubmit       bool
	// staleClaimAfter is --stale-claim-after (export run).
	staleClaimAfter time.Duration

	// dest is --out opened: a directory or an object store.
	dest *export.Storage
	// runOnly is export run: a plan given, run without asking.
	runOnly bool
}

func (a *app) exportCommand() *cobra.Command {
	var fl exportFlags
	cmd := &cobra.Command{
		Use:   "export RESOURCE --by FIELD[,FIELD2] --out DIR",
		Short: "Export every matching record, beyond one delivery's ceiling, as a partitioned dataset",
		Long: `export lands every record of RESOURCE (agents, originators, companies, loans,
properties or branches) that matches the filters as a Hive-partitioned dataset
that DuckDB and Spark read as one table:

  DIR/state=CA/city=Los Angeles/part-00000.parquet  ...  DIR/_manifest.json  DIR/_SUCCESS

The query is split by the --by fields into shards that each fit in one bulk
delivery (a second field splits the shards still above the ceiling), sized with
list totals (nothing is charged). The shards must add up to the whole query, or
the command stops before anything is charged and says by how much. It prints
the plan and asks for confirmation (--yes skips the question; off a terminal it
is required), then runs --concurrency deliveries at once, landing each file as
delivered and checking it, and writes DIR/_SUCCESS once every shard landed and
no id appears twice.

Running the same command again resumes: landed shards are skipped, jobs already
submitted are picked up, a download that was cut continues from its part file,
damaged files are downloaded again from their job (no new charge), and only
failed or never-submitted shards are submitted.

A submit is never cut by a timeout of the command; only Ctrl-C ends it, and then
a submit already sent gets 30 seconds to answer so that its job is recorded. At
most two submits are in flight at once, whatever --concurrency is (it bounds
the jobs and downloads), so a process killed at any moment leaves at most two
shards in doubt. A submit whose answer was lost (a cut connection, a 5xx, a
kill) may have started a job that is charged when it completes and that nobody
can find. Such a shard is not submitted again: the command lists it with the
rows at stake (the shard's planned rows) and exits 1 until you pass
--resubmit-uncertain, which accepts that it may be charged twice. The summary
counts those rows as possibly charged.

Every file is checked as it lands: it decodes, it holds the rows its job
charged, and every row holds its shard's partition values. The plan is sealed
when it is made: a plan edited afterwards is refused before anything is
submitted.

A query that matches nothing (a filter with a typo?) exits 1 without writing
anything; --allow-empty lands an empty dataset (_SUCCESS over no data file: a
DuckDB glob finds no file to read in it).

--plan-only writes the plan to DIR/_plan.json (and prints it; --json: the plan
as JSON) without submitting anything. --shard NAME runs only that shard, so a
workflow can run one shard a task (with --plan FILE, or the plan in DIR), and
'lendgraph export commit --plan DIR' finishes it.

` + datasetReadHelp() + "\n\n" + storeHelp,
		Example: `  lendgraph export agents --by state,city --out agents/ --format parquet
  lendgraph export loans --by state --period 2024 --filter transactionType=purchase --out loans-2024/ --yes
  lendgraph export agents --by state --out agents-by-state/ --plan-only --json > plan.json
  lendgraph export --plan plan.json --shard state=CA --out agents-by-state/ --yes   # one task of a workflow
  lendgraph export agents --by state --out "file://$PWD/agents-bucket" --yes   # an object store URL, s3://bucket/prefix alike (see below)`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exportError(a.runExport(cmd, args, &fl), &fl)
		},
	}
	fl.register(cmd)
	cmd.AddCommand(a.exportPlanCommand(), a.exportRunCommand(), a.exportCommitCommand())
	return cmd
}

// register adds the export flags to cmd.
func (fl *exportFlags) register(cmd *cobra.Command) {
	fl.q.register(cmd)
	f := cmd.Flags()
	f.StringSliceVar(&fl.by, "by", nil, "partition fields, outermost first (e.g. state,city)")
	f.StringVar(&fl.out, "out", "", "the export directory (created; an export already there is resumed), or an object store URL: s3://bucket/prefix")
	f.StringVar(&fl.format, "format", "parquet", "file format: parquet, csv, json or ndjson (.ndjson.gz)")
	f.StringSliceVar(&fl.fields, "fields", nil, "deliver only these fields (id and the --by fields are always kept)")
	f.IntVar(&fl.concurrency, "concurrency", export.DefaultConcurrency, fmt.Sprintf("shards delivered at once (at most %d; submits slow down by themselves when the service does)", export.MaxConcurrency))
	f.BoolVar(&fl.planOnly, "plan-only", false, "plan and print the shards; submit nothing")
	f.StringVar(&fl.planFrom, "plan", "", "run the plan in this file (from --plan-only) instead of planning")
	f.StringArrayVar(&fl.shards, "shard", nil, "run only this shard, e.g. state=CA (repeatable)")
	f.BoolVarP(&fl.yes, "yes", "y", false, "submit without asking")
	f.Int64Var(&fl.maxRows, "max-rows", 0, "row ceiling of one delivery (default: asked of the service)")
	f.StringArrayVar(&fl.values, "values", nil, "FIELD=V1,V2,... the values of a partition field, instead of listing them (repeatable)")
	f.BoolVar(&fl.includeMissing, "include-missing", false, "land records without a value of a partition field under FIELD=__HIVE_DEFAULT_PARTITION__")
	f.Float64Var(&fl.creditsPerRow, "credits-per-row", 0, "price of one delivered row, for the estimate")
	f.BoolVar(&fl.allowEmpty, "allow-empty", false, "accept a query that matches nothing: land an empty dataset")
	f.BoolVar(&fl.resubmit, "resubmit-uncertain", false, "submit again the shards whose earlier submit's answer was lost (they may be charged twice)")
}

func (a *app) runExport(cmd *cobra.Command, args []string, fl *exportFlags) error {
	if fl.out == "" {
		return usagef("--out DIR (or an object store URL, s3://bucket/prefix) is required")
	}
	if fl.concurrency < 1 || fl.concurrency > export.MaxConcurrency {
		return usagef("--concurrency %d: use 1 to %d. Each shard in flight is a job on the service, its polls and a download; more at once only makes every submit slower (submits already slow down by themselves when the service does)", fl.concurrency, export.MaxConcurrency)
	}
	if !slices.Contains(deliveryFormats, fl.format) {
		return usagef("--format must be one of %s", strings.Join(deliveryFormats, ", "))
	}
	if _, _, _, _, err := fl.q.parts(); err != nil {
		return err
	}
	if _, err := planOptions(fl); err != nil {
		return err
	}
	name := ""
	if len(args) == 1 {
		name = args[0]
		if !slices.Contains(deliverable, name) {
			return usagef("no bulk delivery of %q; exportable resources: %s", name, strings.Join(deliverable, ", "))
		}
	}
	if !isURL(fl.out) {
		if err := checkWritable(fl.out); err != nil {
			return usagef("--out %s cannot be written: %v", fl.out, err)
		}
	}
	dest, err := openDestination(cmd.Context(), "--out", fl.out)
	if err != nil {
		return err
	}
	defer dest.Close()
	fl.dest = dest
	plan, fresh, err := a.exportPlan(cmd, name, fl)
	if err != nil {
		return err
	}
	if fresh && name == "" {
		name = plan.Resource // flags that differ from the plan in --out
	}
	if !fresh {
		if err := checkShards(plan, fl.shards); err != nil {
			return err
		}
	}
	c, err := a.clientFor()
	if err != nil {
		return err
	}
	resource := name
	if plan != nil {
		resource = plan.Resource
	}
	ex, err := exporterOf(c, resource)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if plan == nil || fresh {
		replacing := plan != nil
		if plan, err = ex.plan(ctx, a.exportRequest(fl), fl); err != nil {
			return a.planFailed(fl, err)
		}
		if err := checkShards(plan, fl.shards); err != nil {
			return err
		}
		if replacing {
			// The flags differ from the plan in --out: it gives way only
			// when nothing was submitted from it.
			if err := plan.Write(ctx, fl.dest); err != nil {
				return err // another run submitted from it meanwhile: *PlanMismatchError
			}
			a.say("%s held a plan with other flags, from which nothing was submitted (nothing was charged): replaced it with this one", redactedOut(fl.out))
		}
	}
	a.describePlan(plan)
	if fl.planOnly {
		return a.printPlan(ctx, plan, fl)
	}
	var left, uncertain int
	var rows int64
	if fl.runOnly && isURL(fl.out) {
		// A task of an orchestrator: the run reads the claims and records
		// of its shards; reading every shard's here would cost a request
		// each.
		for _, n := range fl.shards {
			if s, ok := plan.Shard(n); ok {
				left, rows = left+1, rows+s.Rows
			}
		}
	} else if left, rows, uncertain, err = remaining(ctx, plan, fl.dest, fl.shards, fl.resubmit); err != nil {
		return err
	}
	switch {
	case left == 0 && uncertain > 0:
		a.say("nothing to submit: %s on a submit whose answer was lost (--resubmit-uncertain submits them again)", plural(uncertain, "shard waits", "shards wait"))
	case left == 0 && len(fl.shards) > 0:
		a.say("the shards asked for have landed; checking them")
	case left == 0:
		a.say("every shard has landed; checking the dataset")
	default:
		a.say("%s (%s) to deliver, %d at once", plural(left, "shard", "shards"), plural(int(rows), "row", "rows"), fl.concurrency)
		if !fl.yes && !fl.runOnly {
			if !a.interactive {
				return usagef("not on a terminal, so there is no way to ask for confirmation: pass --yes to submit")
			}
			if !a.confirm("Submit?") {
				return errors.New("not confirmed; nothing was submitted")
			}
		}
	}
	return a.exportRun(ctx, ex, plan, fl)
}

// exportPlan finds the plan to run: --plan FILE|DIR|URL, the plan of an
// export already in --out (resumed; --plan-only left it there), or none
// (fresh: plan now). The command's flags must agree with a plan found; a
// plan they do not agree with is planned again (fresh), and replaces the
// one in --out only when nothing was submitted from it.
func (a *app) exportPlan(cmd *cobra.Command, name string, fl *exportFlags) (plan *export.Plan, fresh bool, err error) {
	queryGiven := fl.q.set() || len(fl.by) > 0 || len(fl.fields) > 0 || cmd.Flags().Changed("format") ||
		len(fl.values) > 0 || fl.includeMissing || fl.maxRows != 0 || fl.allowEmpty
	ctx := cmd.Context()
	if fl.planFrom != "" {
		if queryGiven {
			return nil, false, usagef("--plan runs a plan as it is: drop --by, --format, --fields, --values, --max-rows, --include-missing, --allow-empty and the query flags")
		}
		if plan, err = readPlanFrom(ctx, fl.planFrom, fl.out, fl.dest); err != nil {
			return nil, false, planError(err)
		}
	} else if plan, err = export.ReadPlan(ctx, fl.dest); errors.Is(err, export.ErrPlanChanged) {
		return nil, false, fmt.Errorf("--out %s: %w", redactedOut(fl.out), err)
	} else if err != nil && !errors.Is(err, export.ErrNoPlan) {
		return nil, false, err
	}
	if plan == nil {
		if name == "" {
			return nil, false, usagef("name the RESOURCE to export (or give --plan FILE)")
		}
		if len(fl.by) == 0 {
			return nil, false, usagef("--by FIELD is required: the field to split the export by, e.g. --by state,city")
		}
		return nil, true, nil
	}
	if name != "" && name != plan.Resource {
		return nil, false, usagef("--out %s holds an export of %s, not %s: pick another --out", redactedOut(fl.out), plan.Resource, name)
	}
	if fl.planFrom == "" && queryGiven {
		if diff := sameQuery(plan, a.exportRequest(fl), fl); diff != nil {
			m, err := export.ReadManifest(ctx, fl.dest)
			if err != nil {
				return nil, false, err
			}
			if slices.ContainsFunc(m.Shards, func(s export.ShardStatus) bool { return s.State != export.StatePending }) {
				return nil, false, usagef("%s holds an export planned with other flags (%v), and shards were submitted from it: run the same command as then to resume it, or pick another --out", redactedOut(fl.out), diff)
			}
			return plan, true, nil // nothing was submitted from it: planned again, and replaced
		}
	}
	if fl.planOnly && fl.planFrom == "" {
		a.say("%s already holds a plan; showing it", redactedOut(fl.out))
	}
	return plan, false, nil
}

// sameQuery reports how a plan differs from the one the flags ask for.
func sameQuery(p *export.Plan, req *lendgraph.DeliveryRequest, fl *exportFlags) error {
	if len(fl.by) > 0 && !slices.Equal(fl.by, p.ByRequested) {
		return fmt.Errorf("--by %s, the plan's is %s", strings.Join(fl.by, ","), strings.Join(p.ByRequested, ","))
	}
	want := *req
	want.Fields = export.DeliveredFields(want.Fields, p.ByRequested)
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(p.Request)
	var x, y any
	_ = json.Unmarshal(a, &x)
	_ = json.Unmarshal(b, &y)
	if !reflect.DeepEqual(x, y) {
		return fmt.Errorf("query %s, the plan's is %s", a, b)
	}
	return nil
}

// exportRequest is the delivery request the flags describe (runExport has
// checked the query flags already).
func (a *app) exportRequest(fl *exportFlags) *lendgraph.DeliveryRequest {
	flat, adv, period, sort, _ := fl.q.parts()
	return &lendgraph.DeliveryRequest{FlatFilters: flat, AdvancedFilters: adv, Period: period, Sort: sort,
		Format: lendgraph.Format(fl.format), Fields: fl.fields}
}

// planOptions are the planner's options from the flags.
func planOptions(fl *exportFlags) (*export.PlanOptions, error) {
	o := &export.PlanOptions{By: fl.by, MaxRows: fl.maxRows, IncludeMissing: fl.includeMissing, CreditsPerRow: fl.creditsPerRow, AllowEmpty: fl.allowEmpty}
	if fl.maxRows < 0 {
		return nil, usagef("--max-rows %d: must not be negative (0 asks the service for its ceiling)", fl.maxRows)
	}
	if fl.creditsPerRow < 0 {
		return nil, usagef("--credits-per-row %v: must not be negative (0 leaves the price unknown)", fl.creditsPerRow)
	}
	for _, v := range fl.values {
		field, list, ok := strings.Cut(v, "=")
		if !ok || field == "" || list == "" {
			return nil, usagef("--values %q: want FIELD=V1,V2,...", v)
		}
		if len(fl.by) > 0 && !slices.Contains(fl.by, field) {
			return nil, usagef("--values %s: %s is not a partition field; --values lists the values of a field the export is split by (%s)", v, field, strings.Join(fl.by, ", "))
		}
		if o.Values == nil {
			o.Values = map[string][]any{}
		}
		for _, s := range strings.Split(list, ",") {
			o.Values[field] = append(o.Values[field], literal(s))
		}
	}
	return o, nil
}

// planFailed explains a plan that cannot run, naming the flag and the
// user's own words the service refused; nothing was charged.
func (a *app) planFailed(fl *exportFlags, err error) error {
	var ce *export.CoverageError
	var big *export.ShardTooBigError
	if errors.As(err, &ce) && ce.Plan != nil || errors.As(err, &big) && big.Plan != nil {
		a.say("the plan cannot run; nothing was submitted")
		return err
	}
	var empty *export.EmptyError
	if errors.As(err, &empty) && fl.q.set() {
		var given []string
		for _, f := range fl.q.filters {
			given = append(given, "--filter "+f)
		}
		if fl.q.where != "" {
			given = append(given, "--where "+fl.q.where)
		}
		if fl.q.period != "" {
			given = append(given, "--period "+fl.q.period)
		}
		return fmt.Errorf("%s: matches no %s: nothing to export (a value with a typo? values are matched exactly, TX is not tx). Nothing was charged; land an empty dataset with --allow-empty", strings.Join(given, " "), empty.Resource)
	}
	var api *lendgraph.APIError
	if errors.As(err, &api) && api.StatusCode == http.StatusBadRequest && strings.Contains(err.Error(), "refused the query") {
		if flag, words := queryCulprit(fl, api.Message); flag != "" {
			return usagef("%s %s: the service refuses it: %s. Nothing was submitted or charged", flag, words, api.Message)
		}
		return usagef("the service refuses the query (--filter, --where, --period or --sort): %s. Nothing was submitted or charged", api.Message)
	}
	return err
}

// queryCulprit finds the query flag, and the user's own words in it, that
// a service's refusal of the query names: the flag value holding a name
// or value the message quotes or starts with.
func queryCulprit(fl *exportFlags, msg string) (flag, words string) {
	mentions := func(s string) bool {
		return s != "" && (strings.Contains(msg, `"`+s+`"`) || strings.Contains(msg, "."+s+":") || strings.Contains(msg, "'"+s+"'") ||
			strings.HasPrefix(msg, s+":") || strings.Contains(msg, " "+s+" ") || strings.HasSuffix(msg, " "+s))
	}
	for _, f := range fl.q.filters {
		k, v, _ := strings.Cut(f, "=")
		if mentions(k) || mentions(v) {
			return "--filter", f
		}
	}
	for _, s := range fl.q.sorts {
		field, _, _ := strings.Cut(s, ":")
		if mentions(field) || strings.HasPrefix(msg, "sort") {
			return "--sort", s
		}
	}
	if fl.q.period != "" && (mentions(fl.q.period) || strings.Contains(msg, "period")) {
		return "--period", fl.q.period
	}
	if fl.q.where != "" && strings.HasPrefix(msg, "advancedFilters") {
		return "--where", fl.q.where
	}
	for _, f := range fl.fields {
		if mentions(f) {
			return "--fields", f
		}
	}
	return "", ""
}

// describePlan prints the plan's summary on stderr.
func (a *app) describePlan(p *export.Plan) {
	credits := "unknown (the price of a row is not published; --credits-per-row estimates it)"
	if cr, ok := p.EstimatedCredits(); ok {
		credits = number(cr)
	}
	ceiling := fmt.Sprintf("%d rows a delivery (%s)", p.MaxRows, p.MaxRowsFrom)
	a.say("plan: %s by %s as %s: %d shards, %d rows; ceiling %s; estimated credits %s",
		p.Resource, strings.Join(p.By, ","), p.Request.Format, len(p.Shards), p.EstimatedRows(), ceiling, credits)
	for _, n := range p.Notes {
		a.say("note: %s", n)
	}
}

// printPlan writes the plan to DIR/_plan.json (or URL/_plan.json) and
// prints it: the shards and their rows, or the plan as JSON with --json.
func (a *app) printPlan(ctx context.Context, p *export.Plan, fl *exportFlags) error {
	if err := p.Write(ctx, fl.dest); err != nil {
		return err
	}
	if a.jsonOut {
		return a.writeJSONLine(p)
	}
	for _, s := range p.Shards {
		credits := ""
		if p.CreditsPerRow > 0 {
			credits = "\t" + number(float64(s.Rows)*p.CreditsPerRow) + " credits"
		}
		fmt.Fprintf(a.stdout, "%s\t%d rows%s\n", s.Name, s.Rows, credits)
	}
	if len(p.Request.Fields) > 0 {
		a.say("note: the service checks --fields (%s) only at submit: a field it does not have stops the run at the first submit, before any other shard is submitted (nothing is charged; run again with other --fields)", strings.Join(p.Request.Fields, ","))
	}
	out := commandOut(fl.out)
	a.say("plan written to %s; run it with the same command without --plan-only, or one shard a task: lendgraph export run --plan %s --shard N, then lendgraph export commit --plan %s", joinURL(redactedOut(fl.out), export.PlanFile), out, out)
	return nil
}

// remaining counts the shards (and rows) to deliver among those asked
// for, and the shards left because a submit's answer was lost (unless
// resubmit), as the destination's claims and records say.
func remaining(ctx context.Context, p *export.Plan, dest *export.Storage, only []string, resubmit bool) (n int, rows int64, uncertain int, err error) {
	m, err := export.ReadManifest(ctx, dest)
	if err != nil && !errors.Is(err, export.ErrNoPlan) {
		return 0, 0, 0, err
	}
	for _, s := range p.Shards {
		if len(only) > 0 && !slices.Contains(only, s.Name) {
			continue
		}
		if m != nil {
			st, ok := m.Status(s.Name)
			if ok && st.State == export.StateLanded {
				continue
			}
			if ok && st.State == export.StateSubmitting && !resubmit {
				uncertain++
				continue
			}
		}
		n++
		rows += s.Rows
	}
	return n, rows, uncertain, nil
}

// exportResult is export's --json output.
type exportResult struct {
	Dir            string   `json:"dir"` // --out: a directory, or a URL without its query
	Shards         int      `json:"shards"`
	Landed         int      `json:"landed"`
	Submitted      int      `json:"submitted"`
	Reattached     int      `json:"reattached"`
	Redownloaded   int      `json:"redownloaded"`
	Skipped        int      `json:"skipped"`
	Pending        []string `json:"pending,omitempty"`
	PlannedRows    int64    `json:"plannedRows"`
	LandedRows     int64    `json:"landedRows"`
	ChargedRows    int64    `json:"chargedRows"`
	CreditsCharged float64  `json:"creditsCharged"`
	// RunChargedRows and RunCreditsCharged are what this run's jobs were
	// charged (chargedRows and creditsCharged count every landed shard's).
	RunChargedRows    int64   `json:"runChargedRows"`
	RunCreditsCharged float64 `json:"runCreditsCharged"`
	// Uncertain are the shards with submits whose answer was lost, and
	// UncertainRows and UncertainCredits what they may charge on top of
	// chargedRows and creditsCharged (credits only with --credits-per-row).
	Uncertain []export.UncertainShard `json:"uncertain,omitempty"`
	// Busy are the shards another task was submitting (exit 75).
	Busy             []string `json:"busy,omitempty"`
	UncertainRows    int64    `json:"uncertainRows"`
	UncertainCredits float64  `json:"uncertainCredits"`
	Complete         bool     `json:"complete"`
	Warnings         []string `json:"warnings,omitempty"`
}

func (a *app) exportRun(ctx context.Context, ex exporter, plan *export.Plan, fl *exportFlags) error {
	m := a.newMeter("export", false)
	progress := map[string]int64{}
	var done int64
	total := plan.EstimatedRows()
	if len(fl.shards) > 0 {
		total = 0
		for _, n := range fl.shards {
			if s, ok := plan.Shard(n); ok {
				total += s.Rows
			}
		}
	}
	opts := &export.RunOptions{Concurrency: fl.concurrency, Shards: fl.shards, ResubmitUncertain: fl.resubmit,
		StaleClaimAfter: fl.staleClaimAfter, StartShard: a.shardSpan(), OnEvent: func(e export.Event) {
			switch e.Kind {
			case export.EventFailed:
				a.sayAbove("shard %s: %s: %v", e.Shard, e.What, e.Err)
			case export.EventUncertain:
				a.sayAbove("shard %s: not submitted again: an earlier submit's answer was lost, and the service may hold a job for it (charged when it completes)", e.Shard)
			case export.EventLanded:
				a.sayAbove("shard %s: landed %d rows (job %s)", e.Shard, e.Rows, e.JobID)
			case export.EventSubmitted, export.EventReattached, export.EventRedownload, export.EventBusy:
				a.sayAbove("shard %s: %s", e.Shard, e.What)
			}
			old := progress[e.Shard]
			switch {
			case e.State == export.StateLanded:
				progress[e.Shard] = max(e.Rows, old)
			case e.Processed > 0:
				progress[e.Shard] = e.Processed
			}
			done += progress[e.Shard] - old
			m.set(done, total)
		}}
	res, err := ex.run(ctx, plan, fl.dest, opts)
	m.end(err == nil)
	if res == nil {
		return err
	}
	if ctx.Err() != nil {
		return &interruptedError{fmt.Sprintf("interrupted with %d of %d shards landed; submitted jobs keep running on the server: run the same command again to resume (nothing is submitted or charged twice)", res.Landed, res.Shards)}
	}
	for _, w := range res.Warnings {
		a.say("warning: %s", w)
	}
	if a.jsonOut {
		if jerr := a.writeJSONLine(exportResult{Dir: redactedOut(fl.out), Shards: res.Shards, Landed: res.Landed, Submitted: res.Submitted,
			Reattached: res.Reattached, Redownloaded: res.Redownloaded, Skipped: res.Skipped, Pending: res.Pending,
			PlannedRows: res.PlannedRows, LandedRows: res.LandedRows, ChargedRows: res.ChargedRows,
			CreditsCharged: res.CreditsCharged, RunChargedRows: res.RunChargedRows, RunCreditsCharged: res.RunCreditsCharged,
			Uncertain: res.Uncertain, UncertainRows: res.UncertainRows,
			UncertainCredits: res.UncertainCredits, Busy: res.Busy, Complete: res.Complete, Warnings: res.Warnings}); jerr != nil {
			return jerr
		}
	} else {
		a.say("%s", runSummary(res, plan, fl.shards))
		switch {
		case res.Complete && plan.Total == 0:
			a.say("committed an empty dataset: %s (no data file, so a DuckDB glob over it finds none: \"No files found\")", joinURL(redactedOut(fl.out), export.SuccessFile))
		case res.Complete:
			a.say("committed: every file was checked as it landed (it decodes, holds its job's rows and only its partition's), each matches its record, no id appears twice; wrote %s", joinURL(redactedOut(fl.out), export.SuccessFile))
		case err == nil && len(fl.shards) > 0 && len(res.Pending) > 0:
			a.say("%s of the export not landed yet; once every shard has run, finish with: lendgraph export commit --plan %s", plural(len(res.Pending), "shard", "shards"), commandOut(fl.out))
		case err == nil && len(fl.shards) > 0:
			a.say("every shard has landed; finish with: lendgraph export commit --plan %s", commandOut(fl.out))
		case err == nil && len(res.Pending) > 0:
			a.say("%s not landed yet (another process works on them?); run the same command again to finish the export", plural(len(res.Pending), "shard", "shards"))
		}
	}
	if err == nil && len(fl.shards) > 0 && len(res.Busy) > 0 {
		// A task: nothing failed, nothing is done; the orchestrator
		// retries it once the other task has recorded its job.
		return &busyError{fmt.Sprintf("%s another task's for now (%s): it is submitting; run this task again later", plural(len(res.Busy), "shard is", "shards are"), strings.Join(res.Busy, ", "))}
	}
	return err
}

// runSummary is the run's account: the shards it worked on and what they
// hold, what this run charged and what the export was charged in all, and,
// for a run of chosen shards, where the whole export stands.
func runSummary(res *export.Result, p *export.Plan, only []string) string {
	worked := res.Shards
	if len(only) > 0 {
		worked = len(only)
	}
	landed := worked - len(res.Pending)
	if len(only) > 0 {
		landed = 0
		for _, n := range only {
			if !slices.Contains(res.Pending, n) {
				landed++
			}
		}
	}
	scope := ""
	if len(only) > 0 {
		scope = " asked for"
	}
	s := fmt.Sprintf("%d of the %s%s landed (%d submitted, %d picked up, %d downloaded again, %d already there): %d rows landed, %d planned; %s",
		landed, plural(worked, "shard", "shards"), scope, res.Submitted, res.Reattached, res.Redownloaded, res.Skipped, res.LandedRows, res.PlannedRows, charges(res, p))
	if len(only) > 0 {
		s += fmt.Sprintf("; the export: %d of %d shards landed", res.Landed, res.Shards)
	}
	return s
}

// plural is n with the noun (and verb) for one or for many: "1 shard",
// "3 shards", "1 shard is".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// charges is the summary's account of what the service charged and may
// have charged: by this run, and for the landed shards in all.
func charges(res *export.Result, p *export.Plan) string {
	s := fmt.Sprintf("%s by this run (%d rows and %s credits for the landed shards in all)",
		plural(int(res.RunChargedRows), "row charged", "rows charged"), res.ChargedRows, number(res.CreditsCharged))
	if len(res.Uncertain) == 0 {
		return s
	}
	jobs := 0
	for _, u := range res.Uncertain {
		jobs += u.Jobs
	}
	more := fmt.Sprintf("%d rows", res.UncertainRows)
	if p.CreditsPerRow > 0 {
		more += ", " + number(res.UncertainCredits) + " credits"
	}
	return fmt.Sprintf("%s, and up to %s more may be charged by %s whose answer was lost (%d rows in all; the estimate is the shards' planned rows)",
		s, more, plural(jobs, "submit", "submits"), res.ChargedRows+res.UncertainRows)
}

// sayAbove prints a message above the progress bar.
func (a *app) sayAbove(format string, args ...any) {
	if a.bars && !a.jsonOut {
		fmt.Fprint(a.stderr, "\r\033[K")
	}
	a.say(format, args...)
}

// exporter is the export package bound to one resource's typed service.
type exporter struct {
	plan func(ctx context.Context, req *lendgraph.DeliveryRequest, fl *exportFlags) (*export.Plan, error)
	run  func(ctx context.Context, p *export.Plan, dest *export.Storage, o *export.RunOptions) (*export.Result, error)
}

func exporterOf(c *lendgraph.Client, name string) (exporter, error) {
	switch name {
	case "agents":
		return exporterFor[lendgraph.Agent](c.Agents), nil
	case "originators":
		return exporterFor[lendgraph.Originator](c.Originators), nil
	case "companies":
		return exporterFor[lendgraph.Company](c.Companies), nil
	case "loans":
		return exporterFor[lendgraph.Loan](c.Loans), nil
	case "properties":
		return exporterFor[lendgraph.Property](c.Properties), nil
	case "branches":
		return exporterFor[lendgraph.Branch](c.Branches), nil
	}
	return exporter{}, usagef("no bulk delivery of %q; exportable resources: %s", name, strings.Join(deliverable, ", "))
}

func exporterFor[T any](src export.Source[T]) exporter {
	return exporter{
		plan: func(ctx context.Context, req *lendgraph.DeliveryRequest, fl *exportFlags) (*export.Plan, error) {
			o, err := planOptions(fl)
			if err != nil {
				return nil, err
			}
			return export.NewPlan(ctx, src, req, o)
		},
		run: func(ctx context.Context, p *export.Plan, dest *export.Storage, o *export.RunOptions) (*export.Result, error) {
			return export.Run(ctx, src, p, dest, o)
		},
	}
}

// checkWritable fails when dir cannot be created or written, before
// anything is planned or submitted. It creates nothing: a missing dir is
// checked at the nearest directory that exists.
func checkWritable(dir string) error {
	for d := dir; ; {
		fi, err := os.Stat(d)
		switch {
		case err == nil && !fi.IsDir():
			return fmt.Errorf("%s is not a directory", d)
		case err == nil:
			f, err := os.CreateTemp(d, ".lendgraph-write-check-*")
			if err != nil {
				return err
			}
			_ = f.Close()
			return os.Remove(f.Name())
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return err
		}
		d = parent
	}
}

// checkShards refuses a --shard the plan does not have.
func checkShards(p *export.Plan, names []string) error {
	for _, n := range names {
		if _, ok := p.Shard(n); !ok {
			example := ""
			if len(p.Shards) > 0 {
				example = fmt.Sprintf(" like %q", p.Shards[len(p.Shards)-1].Name)
			}
			return usagef("--shard %q: the plan has no such shard; its %d shards are named%s, or give a shard's index (export plan, or export --plan-only, lists them in index order)", n, len(p.Shards), example)
		}
	}
	return nil
}

// optionFlags are the export package's options as the command's flags:
// its errors name the options, the command's name the flags.
var optionFlags = map[string]string{
	"PlanOptions.MaxRows":          "--max-rows N",
	"PlanOptions.IncludeMissing":   "--include-missing",
	"PlanOptions.AllowEmpty":       "--allow-empty",
	"PlanOptions.Values":           "--values FIELD=V1,V2,...",
	"RunOptions.ResubmitUncertain": "--resubmit-uncertain",
}

// argFlags are the flags of the export package's InvalidArgumentError.Arg.
var argFlags = map[string]string{"By": "--by", "Concurrency": "--concurrency", "Shards": "--shard", "dest": "--out", "Format": "--format",
	"MaxRows": "--max-rows", "CreditsPerRow": "--credits-per-row", "DeliveryRequest": "--filter/--where"}

// exportError rewords an error of the export package for the command line:
// flags, and the user's own words in them, instead of Go options and
// fields. fl is the command's flags (nil for export commit).
func exportError(err error, fl *exportFlags) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	var bad *lendgraph.InvalidArgumentError
	if errors.As(err, &bad) && argFlags[bad.Arg] != "" && msg == bad.Error() {
		msg = argFlags[bad.Arg] + words(fl, bad.Arg) + ": " + bad.Problem
	}
	var re *export.RunError
	var api *lendgraph.APIError
	if fl != nil && errors.As(err, &re) && errors.As(err, &api) && api.StatusCode == http.StatusBadRequest && refusedAlike(re) {
		// A refusal of the request itself, at the first submits: which
		// flag, in the user's words; nothing was charged.
		if flag, w := queryCulprit(fl, api.Message); flag != "" {
			msg = fmt.Sprintf("%s %s: the service refuses it at submit: %s. No shard was submitted with it, so nothing was charged: run the command again with the flag changed (the plan in --out, from which nothing was submitted, is planned again and replaced)", flag, w, api.Message)
		}
	}
	for option, flag := range optionFlags {
		msg = strings.ReplaceAll(msg, option, flag)
	}
	return &wordedError{msg: msg, err: err}
}

// refusedAlike reports whether a run failed only on refusals of its
// request (no shard landed): the shards refused, and those not submitted
// after them.
func refusedAlike(re *export.RunError) bool {
	for _, f := range re.Failed {
		var api *lendgraph.APIError
		if !errors.As(f.Err, &api) && !strings.Contains(f.Err.Error(), "not submitted") {
			return false
		}
	}
	return len(re.Failed) > 0
}

// words are the user's own words in the flag an export argument comes
// from: " state,ctiy" for By.
func words(fl *exportFlags, arg string) string {
	if fl == nil {
		return ""
	}
	switch arg {
	case "By":
		return " " + strings.Join(fl.by, ",")
	case "Format":
		return " " + fl.format
	case "Concurrency":
		return " " + strconv.Itoa(fl.concurrency)
	}
	return ""
}

// wordedError is an error with the command line's wording.
type wordedError struct {
	msg string
	err error
}

func (e *wordedError) Error() string { return e.msg }
func (e *wordedError) Unwrap() error { return e.err }

// shardSpan is the export's hook for telemetry: one span a shard
// ("lendgraph export.Shard", under the command's), parent of the shard's
// SDK operations; nil when telemetry is off.
func (a *app) shardSpan() func(ctx context.Context, shard string) (context.Context, func(export.ShardStatus, error)) {
	if a.tel == nil {
		return nil
	}
	tracer := a.tel.tp.Tracer(lendgraphotel.ScopeName)
	return func(ctx context.Context, shard string) (context.Context, func(export.ShardStatus, error)) {
		ctx, span := tracer.Start(ctx, "lendgraph export.Shard", trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attribute.String("lendgraph.operation", "export.Shard"), attribute.String("lendgraph.export.shard", shard)))
		return ctx, func(s export.ShardStatus, err error) {
			if s.JobID != "" {
				span.SetAttributes(attribute.String("lendgraph.job.id", s.JobID))
			}
			if s.Rows > 0 {
				span.SetAttributes(attribute.Int64("lendgraph.rows", s.Rows), attribute.Int64("lendgraph.download.bytes", s.Bytes))
			}
			span.SetAttributes(attribute.String("lendgraph.export.state", string(s.State)))
			if err != nil {
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}
	}
}
