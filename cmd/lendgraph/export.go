package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
)

// planFile is where --plan-only leaves the plan in the export directory
// (Spark skips names starting with an underscore).
const planFile = "_plan.json"

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

--plan-only writes the plan to DIR/_plan.json (and prints it; --json: the plan
as JSON) without submitting anything. --shard NAME runs only that shard, so a
workflow can run one shard a task (with --plan FILE, or the plan in DIR).

Read the result with DuckDB:
  SELECT * FROM read_parquet('DIR/**/*.parquet', hive_partitioning = true)
or Spark: spark.read.parquet("DIR")`,
		Example: `  lendgraph export agents --by state,city --out agents/ --format parquet
  lendgraph export loans --by state --period 2024 --filter transactionType=purchase --out loans-2024/ --yes
  lendgraph export agents --by state --out agents-by-state/ --plan-only --json > plan.json
  lendgraph export --plan plan.json --shard state=CA --out agents-by-state/ --yes   # one task of a workflow`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runExport(cmd, args, &fl)
		},
	}
	fl.q.register(cmd)
	f := cmd.Flags()
	f.StringSliceVar(&fl.by, "by", nil, "partition fields, outermost first (e.g. state,city)")
	f.StringVar(&fl.out, "out", "", "the export directory (created; an export already there is resumed)")
	f.StringVar(&fl.format, "format", "parquet", "file format: parquet, csv, json or ndjson (.ndjson.gz)")
	f.StringSliceVar(&fl.fields, "fields", nil, "deliver only these fields (id is always kept)")
	f.IntVar(&fl.concurrency, "concurrency", export.DefaultConcurrency, "shards delivered at once")
	f.BoolVar(&fl.planOnly, "plan-only", false, "plan and print the shards; submit nothing")
	f.StringVar(&fl.planFrom, "plan", "", "run the plan in this file (from --plan-only) instead of planning")
	f.StringArrayVar(&fl.shards, "shard", nil, "run only this shard, e.g. state=CA (repeatable)")
	f.BoolVarP(&fl.yes, "yes", "y", false, "submit without asking")
	f.Int64Var(&fl.maxRows, "max-rows", 0, "row ceiling of one delivery (default: asked of the service)")
	f.StringArrayVar(&fl.values, "values", nil, "FIELD=V1,V2,... the values of a partition field, instead of listing them (repeatable)")
	f.BoolVar(&fl.includeMissing, "include-missing", false, "land records without a value of a partition field under FIELD=__HIVE_DEFAULT_PARTITION__")
	f.Float64Var(&fl.creditsPerRow, "credits-per-row", 0, "price of one delivered row, for the estimate")
	return cmd
}

func (a *app) runExport(cmd *cobra.Command, args []string, fl *exportFlags) error {
	if fl.out == "" {
		return usagef("--out DIR is required")
	}
	if fl.concurrency < 1 {
		return usagef("--concurrency must be at least 1")
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
	plan, fresh, err := a.exportPlan(cmd, name, fl)
	if err != nil {
		return err
	}
	c, err := a.clientFor()
	if err != nil {
		return err
	}
	ex, err := exporterOf(c, plan.Resource)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if plan == nil || fresh {
		if plan, err = ex.plan(ctx, a.exportRequest(fl), fl); err != nil {
			return a.planFailed(err)
		}
	}
	a.describePlan(plan)
	if fl.planOnly {
		return a.printPlan(plan, fl.out)
	}
	left, rows := remaining(plan, fl.out, fl.shards)
	if left == 0 {
		a.say("every shard has landed; checking the dataset")
	} else {
		a.say("%d shards (%d rows) to deliver, %d at once", left, rows, fl.concurrency)
		if !fl.yes {
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

// exportPlan finds the plan to run: --plan FILE, the plan of an export
// already in DIR (resumed), the one --plan-only left there, or none (fresh:
// plan now). The command's flags must agree with a plan found.
func (a *app) exportPlan(cmd *cobra.Command, name string, fl *exportFlags) (plan *export.Plan, fresh bool, err error) {
	queryGiven := fl.q.set() || len(fl.by) > 0 || len(fl.fields) > 0 || cmd.Flags().Changed("format") ||
		len(fl.values) > 0 || fl.includeMissing || fl.maxRows != 0
	if fl.planFrom != "" {
		if queryGiven {
			return nil, false, usagef("--plan runs a plan as it is: drop --by, --format, --fields, --values, --max-rows, --include-missing and the query flags")
		}
		if plan, err = export.ReadPlan(fl.planFrom); err != nil {
			return nil, false, usagef("--plan: %v", err)
		}
	} else if m, err := export.ReadManifest(fl.out); err == nil {
		plan = m.Plan
	} else if _, serr := os.Stat(filepath.Join(fl.out, export.ManifestFile)); !errors.Is(serr, fs.ErrNotExist) {
		return nil, false, err
	} else if p, err := export.ReadPlan(filepath.Join(fl.out, planFile)); err == nil {
		plan = p
	}
	if plan == nil {
		if name == "" {
			return nil, false, usagef("name the RESOURCE to export (or give --plan FILE)")
		}
		if len(fl.by) == 0 {
			return nil, false, usagef("--by FIELD is required: the field to split the export by, e.g. --by state,city")
		}
		return &export.Plan{Resource: name}, true, nil
	}
	if name != "" && name != plan.Resource {
		return nil, false, usagef("%s holds an export of %s, not %s: pick another --out", fl.out, plan.Resource, name)
	}
	if fl.planFrom == "" && queryGiven {
		if err := sameQuery(plan, a.exportRequest(fl), fl); err != nil {
			return nil, false, usagef("%s holds an export planned with other flags (%v): run the same command to resume it, or pick another --out", fl.out, err)
		}
	}
	if fl.planOnly && fl.planFrom == "" {
		a.say("%s already holds a plan; showing it", fl.out)
	}
	return plan, false, nil
}

// sameQuery reports how a plan differs from the one the flags ask for.
func sameQuery(p *export.Plan, req *lendgraph.DeliveryRequest, fl *exportFlags) error {
	if len(fl.by) > 0 && !slices.Equal(fl.by, p.ByRequested) {
		return fmt.Errorf("--by %s, the plan's is %s", strings.Join(fl.by, ","), strings.Join(p.ByRequested, ","))
	}
	want := *req
	if len(want.Fields) > 0 && !slices.Contains(want.Fields, "id") {
		want.Fields = append([]string{"id"}, want.Fields...)
	}
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
	o := &export.PlanOptions{By: fl.by, MaxRows: fl.maxRows, IncludeMissing: fl.includeMissing, CreditsPerRow: fl.creditsPerRow}
	if fl.maxRows < 0 || fl.creditsPerRow < 0 {
		return nil, usagef("--max-rows and --credits-per-row must not be negative")
	}
	for _, v := range fl.values {
		field, list, ok := strings.Cut(v, "=")
		if !ok || field == "" || list == "" {
			return nil, usagef("--values %q: want FIELD=V1,V2,...", v)
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

// planFailed explains a plan that cannot run; nothing was charged.
func (a *app) planFailed(err error) error {
	var ce *export.CoverageError
	var big *export.ShardTooBigError
	if errors.As(err, &ce) && ce.Plan != nil || errors.As(err, &big) && big.Plan != nil {
		a.say("the plan cannot run; nothing was submitted")
	}
	return err
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

// printPlan writes the plan to DIR/_plan.json and prints it: the shards and
// their rows, or the plan as JSON with --json.
func (a *app) printPlan(p *export.Plan, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	file := filepath.Join(dir, planFile)
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		if err := p.WriteFile(file); err != nil {
			return err
		}
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
	a.say("plan written to %s; run it with the same command without --plan-only (or one shard a task: --shard NAME)", file)
	return nil
}

// remaining counts the shards (and rows) not landed yet among those asked for.
func remaining(p *export.Plan, dir string, only []string) (int, int64) {
	m, _ := export.ReadManifest(dir)
	n, rows := 0, int64(0)
	for _, s := range p.Shards {
		if len(only) > 0 && !slices.Contains(only, s.Name) {
			continue
		}
		if m != nil && m.Plan != nil {
			if st, ok := m.Status(s.Name); ok && st.State == export.StateLanded {
				continue
			}
		}
		n++
		rows += s.Rows
	}
	return n, rows
}

// exportResult is export's --json output.
type exportResult struct {
	Dir            string   `json:"dir"`
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
	Complete       bool     `json:"complete"`
	Warnings       []string `json:"warnings,omitempty"`
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
	opts := &export.RunOptions{Dir: fl.out, Concurrency: fl.concurrency, Shards: fl.shards, Observer: a.observer(), OnEvent: func(e export.Event) {
		switch e.Kind {
		case export.EventFailed:
			a.sayAbove("shard %s: %s: %v", e.Shard, e.What, e.Err)
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
	res, err := ex.run(ctx, plan, opts)
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
		if jerr := a.writeJSONLine(exportResult{Dir: res.Dir, Shards: res.Shards, Landed: res.Landed, Submitted: res.Submitted,
			Reattached: res.Reattached, Redownloaded: res.Redownloaded, Skipped: res.Skipped, Pending: res.Pending,
			PlannedRows: res.PlannedRows, LandedRows: res.LandedRows, ChargedRows: res.ChargedRows,
			CreditsCharged: res.CreditsCharged, Complete: res.Complete, Warnings: res.Warnings}); jerr != nil {
			return jerr
		}
	} else {
		a.say("%d of %d shards landed (%d submitted, %d picked up, %d downloaded again, %d already there); %d rows landed, %d planned; %d rows charged, %s credits",
			res.Landed, res.Shards, res.Submitted, res.Reattached, res.Redownloaded, res.Skipped, res.LandedRows, res.PlannedRows, res.ChargedRows, number(res.CreditsCharged))
		switch {
		case res.Complete:
			a.say("verified: every file decodes and holds its job's rows, no id appears twice; wrote %s", filepath.Join(fl.out, export.SuccessFile))
		case err == nil && len(res.Pending) > 0:
			a.say("%d shards not landed yet; run the command without --shard to finish the export", len(res.Pending))
		}
	}
	return err
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
	run  func(ctx context.Context, p *export.Plan, o *export.RunOptions) (*export.Result, error)
}

func exporterOf(c *lendgraph.Client, name string) (exporter, error) {
	switch name {
	case "agents":
		return exporterFor[lendgraph.Agent](c.Agents, name), nil
	case "originators":
		return exporterFor[lendgraph.Originator](c.Originators, name), nil
	case "companies":
		return exporterFor[lendgraph.Company](c.Companies, name), nil
	case "loans":
		return exporterFor[lendgraph.Loan](c.Loans, name), nil
	case "properties":
		return exporterFor[lendgraph.Property](c.Properties, name), nil
	case "branches":
		return exporterFor[lendgraph.Branch](c.Branches, name), nil
	}
	return exporter{}, usagef("no bulk delivery of %q; exportable resources: %s", name, strings.Join(deliverable, ", "))
}

func exporterFor[T any](src export.Source[T], name string) exporter {
	return exporter{
		plan: func(ctx context.Context, req *lendgraph.DeliveryRequest, fl *exportFlags) (*export.Plan, error) {
			o, err := planOptions(fl)
			if err != nil {
				return nil, err
			}
			return export.NewPlan(ctx, src, name, req, o)
		},
		run: func(ctx context.Context, p *export.Plan, o *export.RunOptions) (*export.Result, error) {
			return export.Run(ctx, src, p, o)
		},
	}
}
