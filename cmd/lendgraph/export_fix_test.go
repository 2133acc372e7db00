package main

import (
	"strings"
	"testing"
)

// TestExportStopsOnAnUnknownField: a delivery field the resource does not
// have stops the run at the first submit, and the command says to change
// the request, never to run again; --plan-only says fields are checked at
// submit.
func TestExportStopsOnAnUnknownField(t *testing.T) {
	c := exportCLI(t, 1500, 1000)
	dir := c.path("D")
	args := []string{"export", "agents", "--by", "state", "--fields", "nosuch", "--max-rows", "1000", "--out", dir}
	r := c.run(append(args, "--plan-only")...)
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "checks --fields (id,nosuch,state) only at submit") {
		t.Errorf("--plan-only does not say the fields are checked at submit:\n%s", r.stderr)
	}
	r = c.run(append(args, "--yes", "--concurrency", "1")...)
	wantCode(t, r, 1)
	if n := c.srv.CountRequests("POST", "/v1/agents/bulk-delivery"); n != 1 {
		t.Errorf("%d submits; want 1: every shard would be refused alike", n)
	}
	for _, want := range []string{"nosuch", "run the command again with the flag changed"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	for _, bad := range []string{"run the same export again", "run the same command again", "shards failed; run"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("stderr says %q:\n%s", bad, r.stderr)
		}
	}
}

// TestExportSaysMaxRowsIsAboveTheCeiling: --max-rows above the
// entitlement's ceiling names --max-rows and the service's ceiling.
func TestExportSaysMaxRowsIsAboveTheCeiling(t *testing.T) {
	c := exportCLI(t, 6000, 600)
	r := c.run("export", "agents", "--by", "state", "--max-rows", "1000", "--out", c.path("D"), "--yes", "--concurrency", "1")
	wantCode(t, r, 1)
	for _, want := range []string{"above the service's ceiling of 600", "--max-rows N; 0 asks the service", "at most 600"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	for _, bad := range []string{"grew", "PlanOptions", "run the same"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("stderr says %q:\n%s", bad, r.stderr)
		}
	}
}
