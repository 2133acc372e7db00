package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestFieldsCommand: fields RESOURCE lists the reference's fields with
// their JSON types, offline; --sample adds the fields of one record the
// API sends, with one request; an unknown resource is a usage error.
func TestFieldsCommand(t *testing.T) {
	c := newCLI(t)
	r := c.run("fields", "agents")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "fullName\tstring\treference\n") || !strings.Contains(r.stdout, "transactionCount\tnumber\treference\n") {
		t.Errorf("fields agents:\n%s", r.stdout)
	}
	if n := len(c.srv.Requests()); n != 0 {
		t.Errorf("fields without --sample sent %d requests", n)
	}
	r = c.run("--json", "fields", "agents", "--sample")
	wantCode(t, r, 0)
	var out struct {
		Resource string  `json:"resource"`
		Fields   []field `json:"fields"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	from := map[string]string{}
	for _, f := range out.Fields {
		from[f.Name] = f.From
	}
	if out.Resource != "agents" || from["fullName"] != "reference" || len(from) <= 5 {
		t.Errorf("fields agents --sample: %+v", out)
	}
	if n := len(c.srv.Requests()); n != 1 {
		t.Errorf("fields --sample sent %d requests, want 1", n)
	}
	wantUsageErrors(t, c, [][]string{{"fields", "agent"}, {"fields"}})
}

// TestVersionAndHelp: --version prints the tool's, the SDK's and Go's
// versions; the top-level --help lists every exit code.
func TestVersionAndHelp(t *testing.T) {
	c := newCLI(t)
	r := c.run("--version")
	wantCode(t, r, 0)
	if !strings.HasPrefix(r.stdout, "lendgraph ") || !strings.Contains(r.stdout, "SDK ") || !strings.Contains(r.stdout, "go1.") {
		t.Errorf("--version: %q", r.stdout)
	}
	r = c.run("--help")
	wantCode(t, r, 0)
	help := strings.Join(strings.Fields(r.stdout), " ")
	for _, code := range []string{"0 success", "1 failure", "2 usage error", "3 insufficient credits", "75 an export run task", "130 interrupted"} {
		if !strings.Contains(help, code) {
			t.Errorf("--help lacks the exit code %q", code)
		}
	}
}
