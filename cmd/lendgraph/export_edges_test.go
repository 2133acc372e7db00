package main

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// settled waits until every job the fake started has ended and returns
// the delivery debits and their sum: what the ledger charged.
func settled(t *testing.T, srv *lendgraphtest.Server) (int, float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.WaitJobs(ctx); err != nil {
		t.Fatalf("the fake's jobs did not end: %v", err)
	}
	return srv.Charged(lendgraphtest.DefaultOrg, "delivery")
}

// TestExportNeverChargesTwiceAfterLostAnswers is issue 22's reproduction:
// three submits whose answers are cut mid-body (the fake created and will
// charge their jobs), then the same command run three times. Before, the
// second run submitted those shards again, exited 0, and the ledger held
// 6,247 credits for 6,000 records. Now every run leaves them, names
// --resubmit-uncertain and exits 1; the ledger never holds more than one
// charge a record until the user passes the flag.
func TestExportNeverChargesTwiceAfterLostAnswers(t *testing.T) {
	c := exportCLI(t, 6000, 2000)
	c.srv.InjectFault("POST", "/v1/agents/bulk-delivery", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody, Times: 3})
	dir := c.path("D")
	args := []string{"export", "agents", "--by", "state", "--include-missing", "--max-rows", "2000", "--out", dir, "--yes"}
	var third result
	for run := 1; run <= 3; run++ {
		a := args
		if run == 3 {
			a = append([]string{"--json"}, args...)
		}
		r := c.run(a...)
		third = r
		wantCode(t, r, 1)
		for _, want := range []string{"--resubmit-uncertain", "3 shards were not submitted again", "may be charged twice", "nothing to submit: 3 shards wait on a submit whose answer was lost"} {
			if run > 1 && !strings.Contains(r.stderr, want) {
				t.Errorf("run %d: stderr lacks %q:\n%s", run, want, r.stderr)
			}
		}
		if strings.Contains(r.stderr, "retry them") {
			t.Errorf("run %d tells to run again, which does not resubmit the uncertain shards:\n%s", run, r.stderr)
		}
		if strings.Contains(r.stderr, "RunOptions") || strings.Contains(r.stderr, "PlanOptions") {
			t.Errorf("run %d names Go options:\n%s", run, r.stderr)
		}
		if n, credits := settled(t, c.srv); credits > 6000 {
			t.Fatalf("after run %d the ledger holds %d debits, %v credits, for 6000 records", run, n, credits)
		}
	}
	m, err := manifestOf(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	var stake int64
	for _, s := range m.Shards {
		if s.State == export.StateSubmitting {
			sh, _ := m.Plan.Shard(s.Name)
			stake += sh.Rows
		}
	}

	var left exportResult
	if err := json.Unmarshal([]byte(third.stdout), &left); err != nil {
		t.Fatalf("--json of the third run: %v\n%s", err, third.stdout)
	}
	if len(left.Uncertain) != 3 || left.UncertainRows != stake || left.Complete {
		t.Errorf("--json of the third run: %+v; want the 3 uncertain shards, %d rows at stake", left, stake)
	}
	for _, u := range left.Uncertain {
		if u.State != export.StateSubmitting || u.Jobs != 1 || u.Rows == 0 {
			t.Errorf("uncertain shard %+v", u)
		}
	}

	// The user's say-so: the shards are submitted again and land, and the
	// summary and --json count what the lost submits may have charged.
	r := c.run(append([]string{"--json"}, append(args, "--resubmit-uncertain")...)...)
	wantCode(t, r, 0)
	var res exportResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("stdout: %v\n%s", err, r.stdout)
	}
	if !res.Complete || res.Submitted != 3 || len(res.Uncertain) != 3 || res.UncertainRows != stake || res.ChargedRows != 6000 {
		t.Errorf("result %+v; want 3 shards resubmitted, %d rows at stake", res, stake)
	}
	n, credits := settled(t, c.srv)
	if credits != 6000+float64(stake) {
		t.Errorf("%d debits, %v credits; want 6000 and the %d rows of the three lost jobs", n, credits, stake)
	}
	r = c.run(args...)
	wantCode(t, r, 0)
	if want := fmt.Sprintf("0 rows charged by this run (6000 rows and 6000 credits for the landed shards in all), and up to %d rows more may be charged by 3 submits whose answer was lost (%d rows in all", stake, 6000+stake); !strings.Contains(r.stderr, want) {
		t.Errorf("summary lacks %q:\n%s", want, r.stderr)
	}
}

// TestExportEmptyQuery (item 3): a filter that matches nothing exits 1
// and writes nothing; --allow-empty lands the empty dataset.
func TestExportEmptyQuery(t *testing.T) {
	c := exportCLI(t, 300, 2000)
	dir := c.path("D")
	r := c.run("export", "agents", "--by", "state", "--filter", "state=tx", "--out", dir, "--yes")
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, "matches no agents") || !strings.Contains(r.stderr, "--allow-empty") || strings.Contains(r.stderr, "PlanOptions") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("an empty query left %s: %v", dir, err)
	}
	r = c.run("export", "agents", "--by", "state", "--filter", "state=tx", "--out", dir, "--yes", "--allow-empty")
	wantCode(t, r, 0)
	if _, err := os.Stat(filepath.Join(dir, export.SuccessFile)); err != nil {
		t.Error(err)
	}
	if jobsRun(c.srv) != 0 {
		t.Errorf("%d jobs for an empty query", jobsRun(c.srv))
	}
}

// TestExportMessagesNameFlags (item 4): the command's messages name its
// flags, an unknown --shard is refused before anything is printed, and a
// run without --shard is not told to run without it.
func TestExportMessagesNameFlags(t *testing.T) {
	c := exportCLI(t, 600, 2000)
	// The service never says its ceiling: the message names --max-rows.
	c.srv.InjectFault("POST", "/v1/agents/bulk-delivery", lendgraphtest.Fault{Status: 400, Body: `{"error":"bad_request"}`, Times: 2})
	r := c.run("export", "agents", "--by", "state", "--out", c.path("A"), "--yes")
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, "--max-rows N") || strings.Contains(r.stderr, "PlanOptions") {
		t.Errorf("stderr:\n%s", r.stderr)
	}

	dir := c.path("B")
	wantCode(t, c.run("export", "agents", "--by", "state", "--out", dir, "--yes"), 0)
	jobs := jobsRun(c.srv)
	for _, args := range [][]string{
		{"export", "agents", "--out", dir, "--yes", "--shard", "state=XX"},
		{"export", "agents", "--by", "state", "--out", c.path("C"), "--yes", "--shard", "state=XX"},
	} {
		c.srv.ResetRequests()
		r = c.run(args...)
		wantCode(t, r, 2)
		if !strings.HasPrefix(r.stderr, `lendgraph: --shard "state=XX": the plan has no such shard`) || strings.Contains(r.stderr, "landed") || strings.Contains(r.stderr, "Shards") {
			t.Errorf("%v: stderr:\n%s", args, r.stderr)
		}
		// (A fresh plan is made first, to know its shards: its ceiling
		// probe is refused by the service and starts no job.)
		if n := jobsRun(c.srv); n != jobs {
			t.Errorf("%v: %d jobs; want only the %d export B ran", args, n, jobs)
		}
	}
	r = c.run("export", "agents", "--out", dir, "--yes", "--concurrency", "10000")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, fmt.Sprintf("--concurrency 10000: use 1 to %d", export.MaxConcurrency)) {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// TestExportOptionsHaveFlags: every export option its messages name
// (PlanOptions.X, RunOptions.X in a string of package export) is reworded
// as a flag by the command.
func TestExportOptionsHaveFlags(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("../../export/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("the export package's sources: %v", err)
	}
	re := regexp.MustCompile(`(Plan|Run)Options\.[A-Z]\w*`)
	found := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, _ := strconv.Unquote(lit.Value)
			for _, opt := range re.FindAllString(s, -1) {
				found++
				if optionFlags[opt] == "" {
					t.Errorf("%s: a message names %s, which the command does not reword as a flag", fset.Position(lit.Pos()), opt)
				}
			}
			return true
		})
	}
	if found == 0 {
		t.Fatal("no option named in the export package's messages: the test reads the wrong files")
	}
}

// TestExportUnwritableOut (item 6): an --out that cannot be written fails
// before anything is planned or submitted.
func TestExportUnwritableOut(t *testing.T) {
	c := exportCLI(t, 300, 2000)
	file := c.path("file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	outs := []string{filepath.Join(file, "D")}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := c.path("ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, ro, filepath.Join(ro, "D"))
	}
	for _, out := range outs {
		c.srv.ResetRequests()
		r := c.run("export", "agents", "--by", "state", "--out", out, "--yes")
		wantCode(t, r, 2)
		if !strings.Contains(r.stderr, "--out "+out+" cannot be written") {
			t.Errorf("%s: stderr:\n%s", out, r.stderr)
		}
		if n := len(c.srv.Requests()); n != 0 {
			t.Errorf("%s: %d requests before refusing --out", out, n)
		}
	}
}

// TestExportChecksEveryByField (item 5): a --by field the service does not
// know is refused before anything is probed, even when the plan would not
// need it.
func TestExportChecksEveryByField(t *testing.T) {
	c := exportCLI(t, 300, 5000)
	r := c.run("export", "agents", "--by", "state,nosuchfield", "--out", c.path("D"), "--yes")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, `--by state,nosuchfield: the service refuses "nosuchfield"`) {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	if n := c.srv.CountRequests("POST", "/v1/agents/bulk-delivery"); n != 0 {
		t.Errorf("%d submits", n)
	}
}

// TestExportErrorsNameTheFlag: every refusal names the flag and the user's
// own words in it that caused it, never a Go field, and never another flag
// (a filter the service refuses was once blamed on --by): a field, a value
// and an operator the service refuses, a period, a sort, a partition
// field, a filter that matches nothing, --values of no partition field, a
// negative ceiling; a delivery field the service refuses at submit, after
// which nothing was charged and the same directory takes the corrected
// flags.
func TestExportErrorsNameTheFlag(t *testing.T) {
	c := exportCLI(t, 900, 2000)
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--filter", "stat=TX"}, 2, []string{"--filter stat=TX", `"stat" is not a field`}},
		{[]string{"--filter", "transactionCount=abc"}, 2, []string{"--filter transactionCount=abc", "holds numbers"}},
		{[]string{"--where", `{"field":"state","op":"eqq","value":"TX"}`}, 2, []string{`--where {"field":"state","op":"eqq"`, `unknown op "eqq"`}},
		{[]string{"--period", "20244"}, 2, []string{"--period 20244"}},
		{[]string{"--sort", "fulName"}, 2, []string{"--sort fulName", `"fulName" is not a field`}},
		{[]string{"--filter", "state=TXX"}, 1, []string{"--filter state=TXX", "matches no agents", "--allow-empty"}},
		{[]string{"--values", "stat=TX"}, 2, []string{"--values stat=TX", "not a partition field"}},
		{[]string{"--max-rows", "-1"}, 2, []string{"--max-rows -1"}},
	} {
		r := c.run(append([]string{"export", "agents", "--by", "state", "--out", c.path("e"), "--plan-only"}, tc.args...)...)
		if r.code != tc.code {
			t.Errorf("%v: exit %d, want %d: %s", tc.args, r.code, tc.code, r.stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%v: stderr lacks %q: %s", tc.args, w, r.stderr)
			}
		}
		for _, bad := range []string{"--by", "PlanOptions", "DeliveryRequest", "FlatFilters", "invalid By"} {
			if strings.Contains(r.stderr, bad) {
				t.Errorf("%v: stderr names %q: %s", tc.args, bad, r.stderr)
			}
		}
	}
	r := c.run("export", "agents", "--by", "stat", "--out", c.path("e"), "--plan-only")
	if r.code != 2 || !strings.Contains(r.stderr, "--by stat:") {
		t.Errorf("--by stat: exit %d: %s", r.code, r.stderr)
	}
	if jobsRun(c.srv) != 0 {
		t.Fatalf("%d jobs ran for refused flags", jobsRun(c.srv))
	}

	// A delivery field the service refuses at submit: said with the flag,
	// nothing charged; the same --out then takes the corrected flags.
	dir := c.path("fields")
	r = c.run("export", "agents", "--by", "state", "--out", dir, "--yes", "--fields", "fulName")
	if r.code == 0 || !strings.Contains(r.stderr, "--fields fulName: the service refuses it") || !strings.Contains(r.stderr, "nothing was charged") {
		t.Errorf("--fields fulName: exit %d: %s", r.code, r.stderr)
	}
	if n, credits := settled(t, c.srv); n != 0 || credits != 0 {
		t.Errorf("%d debits, %v credits for a refused field", n, credits)
	}
	r = c.run("export", "agents", "--by", "state", "--out", dir, "--yes", "--fields", "fullName")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "nothing was submitted") || !strings.Contains(r.stderr, "replaced") {
		t.Errorf("the corrected run:\n%s", r.stderr)
	}
}

// TestExportTrips: what tripped a data engineer, each fixed. The plan
// written by export plan into a directory is finished by the export commit
// command it prints; a run of chosen shards says how many of them landed,
// and where the whole export stands; an empty dataset says a glob finds no
// file in it.
func TestExportTrips(t *testing.T) {
	c := exportCLI(t, 600, 300)
	dir := c.path("agents")
	r := c.run("export", "plan", "agents", "--by", "state", "--filter", "state=CA", "--filter", "state=TX", "--out", dir)
	wantCode(t, r, 0)
	commit := regexp.MustCompile(`lendgraph (export commit --plan \S+)`).FindStringSubmatch(r.stderr)
	if commit == nil {
		t.Fatalf("export plan prints no commit command:\n%s", r.stderr)
	}
	r = c.run("export", "run", "--plan", dir, "--shard", "0")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "1 of the 1 shard asked for landed") || !strings.Contains(r.stderr, "the export: 1 of 2 shards landed") ||
		!strings.Contains(r.stderr, "export commit --plan") {
		t.Errorf("export run --shard 0:\n%s", r.stderr)
	}
	wantCode(t, c.run("export", "run", "--plan", dir, "--shard", "1"), 0)
	r = c.run(strings.Fields(commit[1])...)
	wantCode(t, r, 0)
	if _, err := os.Stat(filepath.Join(dir, export.SuccessFile)); err != nil {
		t.Errorf("the printed commit command did not commit: %v\n%s", err, r.stderr)
	}

	r = c.run("export", "agents", "--by", "state", "--filter", "state=ZZ", "--allow-empty", "--out", c.path("empty"), "--yes")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "empty dataset") || !strings.Contains(r.stderr, "No files found") {
		t.Errorf("an empty dataset:\n%s", r.stderr)
	}
}
