package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	// The object stores --out opens by URL: S3 and what speaks its
	// protocol (MinIO, R2, GCS interoperability), and file:// for a
	// directory with the same layout and commit as a bucket.
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/s3blob"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
)

// jobIndexEnv is the variable a Kubernetes Indexed Job sets in each pod:
// its index, which export run takes as --shard when none is given.
const jobIndexEnv = "JOB_COMPLETION_INDEX"

// storeHelp is the help's part about object store destinations and the
// three steps.
const storeHelp = `--out takes an object store URL instead of a directory: s3://BUCKET/PREFIX
(AWS S3 and what speaks its protocol: MinIO, R2, GCS interoperability). The
dataset and the export's own files are the same in both. The credentials,
region and endpoint come from the store's standard chains: for S3,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_PROFILE,
AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL), ~/.aws/config and
~/.aws/credentials, the instance's role. A URL's query holds the driver's
settings, never credentials: for MinIO on its default port,

  export AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... AWS_REGION=us-east-1
  export AWS_ENDPOINT_URL_S3=http://127.0.0.1:9000
  lendgraph export agents --by state --out 's3://exports/agents?use_path_style=true' --yes

Into a bucket, each shard's file streams from its signed link into the store
(a multipart upload; nothing on local disk) and is checked on the way; it
appears under its name only once complete and checked. Many machines (or
processes) can run shards of one plan at once, into a bucket or a directory,
without a lock over the whole, in three steps:

  lendgraph export plan agents --by state,city --out s3://exports/agents
  lendgraph export run --plan s3://exports/agents --shard N   # one task a shard; N from 0,
                                                              # or JOB_COMPLETION_INDEX
  lendgraph export commit --plan s3://exports/agents          # once every shard ran

A shard is claimed with an exclusive write (If-None-Match: *; in a directory a
hard link) before its submit, so two tasks of one shard never both submit it:
the second continues the first one's job, or, when the first died between its
submit and the record of its job id, leaves the shard as uncertain
(--resubmit-uncertain). commit checks every shard's record against its file
and that no id appears twice, then writes _manifest.json, and _SUCCESS last.`

// isURL says whether --out (or --plan) names an object store rather than a
// local path.
func isURL(s string) bool { return strings.Contains(s, "://") }

// openDestination opens a directory or an object store URL given by flag.
func openDestination(ctx context.Context, flag, raw string) (*export.Storage, error) {
	st, err := export.Open(ctx, raw)
	var bad *lendgraph.InvalidArgumentError
	if errors.As(err, &bad) {
		return nil, usagef("%s: %s", flag, bad.Problem)
	}
	if err != nil {
		return nil, usagef("%s: %v", flag, err)
	}
	return st, nil
}

// commandOut is --out as a command to run next names it: a URL keeps the
// query parameters it needs (use_path_style, region), but none that holds
// a user or password (an endpoint's).
func commandOut(out string) string {
	u, err := url.Parse(out)
	if !isURL(out) || err != nil || u.RawQuery == "" {
		return redactedOut(out)
	}
	q := u.Query()
	for k, vs := range q {
		if slices.ContainsFunc(vs, func(v string) bool { return strings.Contains(v, "@") }) {
			q.Del(k)
		}
	}
	u.User, u.RawQuery, u.Fragment = nil, q.Encode(), ""
	return "'" + u.String() + "'"
}

// redactedOut is --out for messages and --json: a URL without its query.
func redactedOut(out string) string {
	if !isURL(out) {
		return out
	}
	u, err := url.Parse(out)
	if err != nil {
		return "the --out URL"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// joinURL names an object under a destination (a URL or a directory).
func joinURL(dest, name string) string {
	if !isURL(dest) {
		return filepath.Join(dest, name)
	}
	return strings.TrimRight(dest, "/") + "/" + name
}

// readPlanFrom reads --plan: the plan in a destination (a directory or
// an object store URL: its _plan.json), or a plan file (JSON, as
// --plan-only --json prints it), checked as it decodes.
func readPlanFrom(ctx context.Context, from, out string, dest *export.Storage) (*export.Plan, error) {
	fi, err := os.Stat(from)
	if isURL(from) || err == nil && fi.IsDir() {
		if dest == nil || from != out {
			pd, err := openDestination(ctx, "--plan", from)
			if err != nil {
				return nil, err
			}
			defer pd.Close()
			dest = pd
		}
		return export.ReadPlan(ctx, dest)
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return nil, err
	}
	var p export.Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s is not a plan: %w", from, err)
	}
	return &p, nil
}

// planError is a failure to read --plan: a usage error when there is no
// plan there or it is not one (a wrong --plan, or one changed since it was
// planned), an error of its own (exit 1) when the store could not be read
// (credentials, network, a missing bucket), which no other flag would mend.
func planError(err error) error {
	var usage *usageError
	var bad *lendgraph.InvalidArgumentError
	var syntax *json.SyntaxError
	if errors.As(err, &usage) {
		return err
	}
	if errors.Is(err, fs.ErrNotExist) && !missingBucket(err) || errors.As(err, &bad) || errors.As(err, &syntax) ||
		errors.Is(err, export.ErrPlanChanged) || strings.Contains(err.Error(), "is not a plan") {
		return usagef("--plan: %v", err)
	}
	return fmt.Errorf("--plan: %w", err)
}

// missingBucket reports whether err is S3's "the bucket does not exist",
// which gocloud reports as NotFound like a missing object.
func missingBucket(err error) bool { return strings.Contains(err.Error(), "NoSuchBucket") }

// exportPlanCommand is `export plan`: the first of the three steps.
func (a *app) exportPlanCommand() *cobra.Command {
	var fl exportFlags
	cmd := &cobra.Command{
		Use:   "plan RESOURCE --by FIELD[,FIELD2] --out DIR|URL",
		Short: "Plan an export and write the plan to DIR/_plan.json or URL/_plan.json; submit nothing",
		Long: `export plan sizes the shards of an export, as the export command does, and
writes the plan where the export goes (DIR/_plan.json, or URL/_plan.json in an
object store) for the tasks of an orchestrator: then one
'lendgraph export run --plan DIR|URL --shard N' a shard, and
'lendgraph export commit --plan DIR|URL' to finish. Nothing is submitted.

` + storeHelp,
		Example: `  lendgraph export plan agents --by state --out "file://$PWD/agents-store"   # s3://bucket/prefix alike`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fl.planOnly = true
			return exportError(a.runExport(cmd, args, &fl), &fl)
		},
	}
	fl.register(cmd)
	_ = cmd.Flags().MarkHidden("plan-only")
	return cmd
}

// exportRunCommand is `export run`: one task of an orchestrator.
func (a *app) exportRunCommand() *cobra.Command {
	var fl exportFlags
	cmd := &cobra.Command{
		Use:   "run --plan DIR|URL [--shard N|NAME]",
		Short: "Run shards of a plan written by export plan (one task of an orchestrator)",
		Long: `export run runs the shards of the plan at DIR|URL (written by export plan)
into the same destination. --shard takes a shard's index in the plan (from 0)
or its name (state=CA), and may be repeated; without --shard, the index comes
from ` + jobIndexEnv + `, which a Kubernetes Indexed Job sets in each pod, so
the Job needs no wrapper script. It does not ask for confirmation: the plan
was shown when it was made. A shard already landed is skipped; a shard
another task submitted is continued from its job; a shard another task is
still submitting (its claim holds no job id yet, and is younger than
--stale-claim-after) is left to it, and the command exits 75: run it again
later, as an orchestrator's retry does. Nothing is submitted or charged
twice (see export --help). When every shard has run, finish with
'lendgraph export commit --plan DIR|URL'.`,
		Example: `  lendgraph export run --plan "file://$PWD/agents-store" --shard 0   # s3://bucket/prefix alike
  lendgraph export run --plan "file://$PWD/agents-store" --shard state=CA
  JOB_COMPLETION_INDEX=3 lendgraph export run --plan "file://$PWD/agents-store"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if fl.planFrom == "" {
				return usagef("--plan DIR|URL is required: where export plan wrote the plan")
			}
			if fl.out == "" {
				fl.out = fl.planFrom
			}
			fl.runOnly = true
			fl.format = "parquet" // unused: the plan's format is delivered
			shards, err := a.resolveShards(cmd.Context(), &fl)
			if err != nil {
				return exportError(err, &fl)
			}
			fl.shards = shards
			return exportError(a.runExport(cmd, nil, &fl), &fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.planFrom, "plan", "", "where export plan wrote the plan: a directory, an object store URL, or a plan file (then give --out)")
	f.StringVar(&fl.out, "out", "", "the export's destination (default: --plan)")
	f.StringArrayVar(&fl.shards, "shard", nil, "the shard to run: its index in the plan (from 0, in the order export plan lists them) or its name, e.g. state=CA (repeatable; default: $"+jobIndexEnv+")")
	f.IntVar(&fl.concurrency, "concurrency", export.DefaultConcurrency, "shards delivered at once")
	f.BoolVar(&fl.resubmit, "resubmit-uncertain", false, "submit again a shard whose earlier submit's answer was lost (it may be charged twice); a claim younger than --stale-claim-after is still left to its task")
	f.DurationVar(&fl.staleClaimAfter, "stale-claim-after", export.DefaultStaleClaimAfter, "how long another task's claim of a shard may go without a job id before it counts as a submit whose answer was lost; a younger one is a task still submitting (exit 75)")
	return cmd
}

// resolveShards turns --shard (indexes or names), or JOB_COMPLETION_INDEX,
// into shard names, checked against the plan.
func (a *app) resolveShards(ctx context.Context, fl *exportFlags) ([]string, error) {
	given, source := fl.shards, "--shard"
	if len(given) == 0 {
		v, ok := os.LookupEnv(jobIndexEnv)
		if !ok || v == "" {
			return nil, usagef("which shard? give --shard N (its index in the plan, from 0) or --shard NAME, or set %s (a Kubernetes Indexed Job sets it in each pod)", jobIndexEnv)
		}
		if _, err := strconv.Atoi(v); err != nil {
			return nil, usagef("%s is %q, not a shard index", jobIndexEnv, v)
		}
		given, source = []string{v}, jobIndexEnv+"="
	}
	plan, err := readPlanFrom(ctx, fl.planFrom, "", nil)
	if err != nil {
		return nil, planError(err)
	}
	var names []string
	for _, g := range given {
		i, err := strconv.Atoi(g)
		if err != nil {
			names = append(names, g) // a name: checked by runExport
			continue
		}
		if i < 0 || i >= len(plan.Shards) {
			if source == "--shard" {
				source += " "
			}
			return nil, usagef("%s%d: the plan has %d shards, indexed 0 to %d", source, i, len(plan.Shards), len(plan.Shards)-1)
		}
		names = append(names, plan.Shards[i].Name)
	}
	return names, nil
}

// commitResult is export commit's --json output.
type commitResult struct {
	Out         string  `json:"out"`
	Shards      int     `json:"shards"`
	PlannedRows int64   `json:"plannedRows"`
	LandedRows  int64   `json:"landedRows"`
	ChargedRows int64   `json:"chargedRows"`
	Credits     float64 `json:"creditsCharged"`
	// UncertainRows are the rows that submits whose answer was lost may
	// have had charged on top of ChargedRows (the shards' planned rows, a
	// submit each): the shards submitted again with --resubmit-uncertain.
	UncertainRows int64 `json:"uncertainRows"`
	DuplicateIDs  int64 `json:"duplicateIds"`
	Complete      bool  `json:"complete"`
}

// exportCommitCommand is `export commit`: the last of the three steps.
func (a *app) exportCommitCommand() *cobra.Command {
	var plan string
	cmd := &cobra.Command{
		Use:   "commit --plan DIR|URL",
		Short: "Finish an export once every shard has run: check it, write _manifest.json and _SUCCESS",
		Long: `export commit checks that every shard of the plan at DIR|URL has a record that
matches its data file (in a bucket size and ETag: nothing is downloaded; in a
directory size and sha256) and that no id appears twice across the dataset
(from each shard's digest of its ids, in bounded memory), then writes
_manifest.json, and _SUCCESS last: a reader that sees _SUCCESS sees the whole
dataset. It submits and charges nothing, and may be run again. It exits 1
naming the shards not landed, or not matching their records (run them again:
no new charge), or the ids found twice. The export command commits by itself
when it runs every shard; commit finishes an export run one shard a task.`,
		Example: `  lendgraph export commit --plan agents/
  lendgraph export commit --plan "file://$PWD/agents-bucket"   # s3://bucket/prefix alike`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if plan == "" {
				return usagef("--plan DIR|URL is required: where export plan wrote the plan")
			}
			dest, err := openDestination(cmd.Context(), "--plan", plan)
			if err != nil {
				return err
			}
			defer dest.Close()
			m, err := export.Commit(cmd.Context(), dest, nil)
			if errors.Is(err, export.ErrNoPlan) || errors.Is(err, export.ErrPlanChanged) {
				return usagef("--plan %s: %v", redactedOut(plan), err)
			}
			var ce *export.CommitError
			if errors.As(err, &ce) {
				for _, f := range ce.Mismatched {
					a.say("shard %s: %v", f.Shard, f.Err)
				}
			}
			if m != nil && m.Verification != nil {
				v := m.Verification
				uncertain := v.UncertainRows
				if a.jsonOut {
					if jerr := a.writeJSONLine(commitResult{Out: redactedOut(plan), Shards: v.Files, PlannedRows: v.PlannedRows, LandedRows: v.LandedRows,
						ChargedRows: v.ChargedRows, Credits: v.CreditsCharged, UncertainRows: uncertain, DuplicateIDs: v.DuplicateIDs, Complete: v.Complete && err == nil}); jerr != nil {
						return jerr
					}
				} else {
					more := ""
					if uncertain > 0 {
						more = fmt.Sprintf(", and up to %d rows more may have been charged by submits whose answer was lost (--resubmit-uncertain submitted them again)", uncertain)
					}
					a.say("%d shards, %d rows landed, %d planned; %d rows charged, %s credits%s; %d ids found twice", v.Files, v.LandedRows, v.PlannedRows, v.ChargedRows, number(v.CreditsCharged), more, v.DuplicateIDs)
				}
			}
			if err != nil {
				return exportError(err, nil)
			}
			a.say("committed: wrote %s, then %s", joinURL(redactedOut(plan), export.ManifestFile), joinURL(redactedOut(plan), export.SuccessFile))
			return nil
		},
	}
	cmd.Flags().StringVar(&plan, "plan", "", "where export plan wrote the plan: a directory or an object store URL")
	return cmd
}
