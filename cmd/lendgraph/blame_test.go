package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// TestErrorsNameTheFlag: an error caused by a flag or an argument names it
// with the user's own words, whether the tool, the SDK or the API refused
// it, and never an SDK field name ("invalid Limit", "set Limit <= N").
func TestErrorsNameTheFlag(t *testing.T) {
	c := newCLI(t)
	c.srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 1000})
	sdkNames := regexp.MustCompile(`invalid [A-Z]|\b(Limit|State|City|DateRange|RankBy|Pagination\.Size|Query|Entities|Format)\b`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"search", "smi", "--limit", "1000"}, "--limit 1000: 1000 is outside 1..50"},
		{[]string{"search", " ", "--limit", "3"}, `QUERY " ": is only white space`},
		{[]string{"market", "most-gained", "--state", "TXX"}, `--state TXX: "TXX" must be a two-letter state code`},
		{[]string{"market", "most-gained", "--city", "Austin"}, "--city Austin: set --state too"},
		{[]string{"market", "most-gained", "--date-range", "last_year"}, `--date-range last_year: "last_year" is not one of`},
		{[]string{"get", "agents", ""}, `ID "": must not be empty`},
		{[]string{"list", "agents", "--size", "500"}, "--size 500: a page holds 1 to 100 records"},
		{[]string{"list", "agents", "--where", "state ~ TX"}, `--where "state ~ TX": not a filter in JSON`},
		{[]string{"list", "agents", "--filter", "stat=TX"}, `--filter stat=TX: POST /v1/agents: 400`},
		{[]string{"count", "agents", "--filter", "stat=TX"}, `--filter stat=TX: `},
		{[]string{"deliver", "agents", "--format", "csv", "--filter", "stat=TX", "-o", "a.csv"}, "--filter stat=TX: POST /v1/agents/bulk-delivery: 400"},
		{[]string{"deliver", "agents", "--format", "csv", "--fields", "id,FullName", "-o", "b.csv"}, "--fields FullName: POST /v1/agents/bulk-delivery: 400"},
		{[]string{"deliver", "agents", "--format", "csv", "--period", "20244", "-o", "c.csv"}, "--period 20244: POST /v1/agents/bulk-delivery: 400"},
		{[]string{"deliver", "agents", "--format", "csv", "--sort", "id", "--sort", "fulName:desc", "-o", "d.csv"}, "--sort fulName:desc: POST /v1/agents/bulk-delivery: 400"},
		{[]string{"deliver", "agents", "--format", "csv", "--limit", "30000", "-o", "e.csv"}, "--limit 30000: "},
		{[]string{"deliver", "agents", "--format", "csv", "-o", "f.csv"}, "over this organization's ceiling of 1000 rows a delivery: narrow the filters, or pass --limit 1000 (or less)"},
		{[]string{"deliver", "agents", "--format", "xml", "-o", "g.csv"}, `--format "xml": use one of parquet, csv, json, ndjson`},
		{[]string{"rows", "x.csv", "--to", "xml"}, `--to "xml": use ndjson, csv, json or parquet`},
	} {
		r := c.run(tc.args...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("lendgraph %s: exit %d, stderr lacks %q:\n%s", strings.Join(tc.args, " "), r.code, tc.want, r.stderr)
		}
		if m := sdkNames.FindString(r.stderr); m != "" {
			t.Errorf("lendgraph %s: stderr names the SDK's %q:\n%s", strings.Join(tc.args, " "), m, r.stderr)
		}
	}
}
