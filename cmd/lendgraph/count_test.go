package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// TestCount_EveryResource: count prints the number of records of the
// fake's dataset that match the filters, for every resource, through the
// resource's count endpoint where it has one and its list total elsewhere.
func TestCount_EveryResource(t *testing.T) {
	c := newCLI(t, lendgraphtest.WithDefaultRows(700))
	data := c.srv.Dataset()
	matching := func(resource, state string) int {
		n := 0
		for i := range data.Len(resource) {
			if state == "" || data.Record(resource, i)["state"] == state {
				n++
			}
		}
		return n
	}
	for _, res := range resourceNames {
		for _, state := range []string{"", "TX"} {
			args := []string{"count", res, "--json"}
			if state != "" {
				if matching(res, state) == 0 {
					t.Logf("%s: no record has the state %s", res, state)
					continue
				}
				args = append(args, "--filter", "state="+state)
			}
			c.srv.ResetRequests()
			r := c.run(args...)
			wantCode(t, r, 0)
			var got countAnswer
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("%s: %q: %v", strings.Join(args, " "), r.stdout, err)
			}
			if want := matching(res, state); got.Total != int64(want) || got.Resource != res {
				t.Errorf("%s: %+v, the fake holds %d", strings.Join(args, " "), got, want)
			}
			// One request, to the endpoint the answer names.
			reqs := c.srv.Requests()
			if len(reqs) != 1 || reqs[0].Method+" "+reqs[0].Path != got.Endpoint {
				t.Errorf("%s: endpoint %q; the fake received %d requests, the first %+v", strings.Join(args, " "), got.Endpoint, len(reqs), reqs)
			}
			wantEndpoint := "POST /v1/" + res
			if res == "originators" || res == "properties" {
				wantEndpoint += "/count"
			}
			if got.Endpoint != wantEndpoint {
				t.Errorf("%s: counted with %s, want %s", strings.Join(args, " "), got.Endpoint, wantEndpoint)
			}
			if (res == "originators") != (got.TotalIsLowerBound != nil) {
				t.Errorf("%s: totalIsLowerBound %v", strings.Join(args, " "), got.TotalIsLowerBound)
			}
		}
	}
	// Without --json: the number alone.
	r := c.run("count", "agents", "--filter", "state=TX")
	wantCode(t, r, 0)
	if r.stdout != strconv.Itoa(matching("agents", "TX"))+"\n" {
		t.Errorf("count agents --filter state=TX printed %q", r.stdout)
	}
}

// TestCount_Usage: mistakes exit 2 before any request.
func TestCount_Usage(t *testing.T) {
	c := newCLI(t)
	wantUsageErrors(t, c, [][]string{
		{"count", "nosuch"},
		{"count", "agents", "--sort", "state"},
		{"count", "agents", "--filter", "state"},
		{"count", "agents", "--where", "{"},
		{"count"},
	})
}
