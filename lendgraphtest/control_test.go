package lendgraphtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// ctl sends a control request and decodes the JSON answer.
func ctl(t *testing.T, s *Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: %d %q is not a JSON object", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

func TestControlEndpoint(t *testing.T) {
	s := NewServer(t, WithDefaultRows(3000), WithControlEndpoint(), WithSettings(Settings{
		Credits:      ptr(5000.0),
		Entitlements: map[string]*Entitlement{"agents": {MaxRows: 2000}},
		JobRate:      map[string]float64{"delivery": 1e6},
	}))
	if s.ControlURL() != s.URL+"/_fake" {
		t.Fatalf("ControlURL %q", s.ControlURL())
	}
	code, idx := ctl(t, s, "GET", "/_fake/", "")
	if code != 200 || len(idx["routes"].([]any)) == 0 || idx["searchHost"] != s.SearchHostURL() {
		t.Fatalf("index: %d %v", code, idx)
	}
	// The settings given at start are in force.
	code, st := ctl(t, s, "GET", "/_fake/settings", "")
	if code != 200 || st["credits"] != 5000.0 || st["rows"] != 3000.0 || st["seed"] != 1.0 ||
		st["entitlements"].(map[string]any)["agents"].(map[string]any)["maxRows"] != 2000.0 {
		t.Fatalf("settings: %d %v", code, st)
	}

	// A delivery above the ceiling: 400 delivery_exceeds_max_rows.
	status, body := postPath(t, s, "/v1/agents/bulk-delivery", map[string]any{"format": "csv"})
	if status != 400 || body["error"] != "delivery_exceeds_max_rows" || body["maxRows"] != json.Number("2000") {
		t.Fatalf("over the ceiling: %d %v", status, body)
	}
	// Raise the ceiling and the balance over HTTP; narrow the columns.
	if code, org := ctl(t, s, "PUT", "/_fake/orgs/org_default/entitlements/agents", `{"maxRows": 5000, "columns": ["id", "state"]}`); code != 200 ||
		org["entitlements"].(map[string]any)["agents"].(map[string]any)["maxRows"] != 5000.0 {
		t.Fatalf("entitlement: %d %v", code, org)
	}
	if code, org := ctl(t, s, "PUT", "/_fake/orgs/org_default/credits", `{"credits": 4000}`); code != 200 || org["credits"] != 4000.0 {
		t.Fatalf("credits: %d %v", code, org)
	}
	status, body = postPath(t, s, "/v1/agents/bulk-delivery", map[string]any{"format": "csv", "flatFilters": map[string]any{"state": "TX"}})
	if status != 202 {
		t.Fatalf("delivery: %d %v", status, body)
	}
	waitJob(t, s, body["jobId"].(string))
	estimated, _ := body["estimatedTotal"].(json.Number).Int64()
	code, ledger := ctl(t, s, "GET", "/_fake/orgs/org_default/ledger", "")
	debits := ledger["debits"].([]any)
	if code != 200 || len(debits) != 1 || debits[0].(map[string]any)["reason"] != "delivery" ||
		debits[0].(map[string]any)["amount"] != float64(estimated) || ledger["credits"] != 4000-float64(estimated) {
		t.Fatalf("ledger: %d %v (estimated %d)", code, ledger, estimated)
	}

	// Faults over HTTP, in the docs' route syntax; one, then an array.
	if code, out := ctl(t, s, "POST", "/_fake/faults", `{"method":"POST","path":"/v1/{resource}","status":429,"headers":{"Retry-After":"1"},"body":"{\"error\":\"slow down\"}"}`); code != 201 || out["armed"] != 1.0 {
		t.Fatalf("arm: %d %v", code, out)
	}
	if code, out := ctl(t, s, "POST", "/_fake/faults", `[{"path":"/v1/loans/{id}","kind":"stall","delay":"10ms","times":-1}]`); code != 201 || out["armed"] != 1.0 {
		t.Fatalf("arm array: %d %v", code, out)
	}
	code, fl := ctl(t, s, "GET", "/_fake/faults", "")
	if faults := fl["faults"].([]any); code != 200 || len(faults) != 2 || faults[1].(map[string]any)["kind"] != "stall" || faults[1].(map[string]any)["times"] != -1.0 {
		t.Fatalf("faults: %d %v", code, fl)
	}
	if status, body := post(t, s, "agents", nil); status != 429 || body["error"] != "slow down" {
		t.Fatalf("injected 429: %d %v", status, body)
	}
	if status, _ := post(t, s, "agents", nil); status != 200 {
		t.Fatalf("after the 429: %d", status)
	}
	if code, _ := ctl(t, s, "DELETE", "/_fake/faults", ""); code != 200 {
		t.Fatal("clear faults")
	}

	// The request log, keys redacted, control requests not in it.
	code, log := ctl(t, s, "GET", "/_fake/requests?method=POST&path=/v1/{resource}", "")
	reqs := log["requests"].([]any)
	if code != 200 || log["count"] != 2.0 || len(reqs) != 2 {
		t.Fatalf("request log: %d %v", code, log)
	}
	if h := reqs[0].(map[string]any)["headers"].(map[string]any); h["X-Api-Key"] != "[redacted]" {
		t.Fatalf("key not redacted: %v", h)
	}
	all := s.Requests()
	for _, r := range all {
		if strings.HasPrefix(r.Path, "/_fake") {
			t.Fatalf("control request logged: %+v", r)
		}
	}

	// Run-time settings: pace and link lifetime; dataset members refused.
	code, st = ctl(t, s, "PATCH", "/_fake/settings", `{"jobRate": {"delivery": 1000}, "linkTtl": "1m", "computeDelay": "0s"}`)
	if code != 200 || st["jobRate"].(map[string]any)["delivery"] != 1000.0 || st["linkTtl"] != "1m0s" || st["computeDelay"] != "0s" {
		t.Fatalf("patch: %d %v", code, st)
	}
	for body, want := range map[string]string{
		`{"rows": 10}`:                      "fixed once the fake runs",
		`{"jobRate": {"export": 1}}`:        `unknown job kind "export"`,
		`{"linkTtl": "soon"}`:               "linkTtl",
		`{"faults": [{"path": "v1/x"}]}`:    "faults[0].path",
		`{"entitlements": {"sales": null}}`: "offers no bulk delivery",
		`{"credit": 5}`:                     `unknown field "credit"`,
		`{"entitlements": {"agents": {"maxRows": 9, "columns": ["fulName"]}}}`: `entitlements.agents: columns[0]: "fulName"`,
	} {
		if code, out := ctl(t, s, "PATCH", "/_fake/settings", body); code != 400 || !strings.Contains(out["error"].(string), want) {
			t.Errorf("PATCH %s: %d %v, want 400 naming %q", body, code, out, want)
		}
	}
	if s.Credits(DefaultOrg) != 4000-float64(estimated) {
		t.Fatal("a refused PATCH changed something")
	}

	// Callers and the clock.
	if code, c := ctl(t, s, "POST", "/_fake/callers", `{"orgId": "org_x"}`); code != 201 || c["orgId"] != "org_x" || !strings.HasPrefix(c["key"].(string), "lg_test_") {
		t.Fatalf("caller: %d %v", code, c)
	}
	before := s.Now()
	if code, _ := ctl(t, s, "POST", "/_fake/clock", `{"advance": "48h"}`); code != 200 || s.Now().Sub(before) < 48*time.Hour {
		t.Fatal("clock")
	}
	if code, jobs := ctl(t, s, "GET", "/_fake/jobs", ""); code != 200 || len(jobs["jobs"].([]any)) != 1 {
		t.Fatalf("jobs: %v", jobs)
	}
	if code, out := ctl(t, s, "GET", "/_fake/nope", ""); code != 404 || !strings.Contains(out["error"].(string), "GET /_fake/ lists") {
		t.Fatalf("unknown control route: %d %v", code, out)
	}
}

func TestControlEndpointOffByDefault(t *testing.T) {
	s := NewServer(t, WithDefaultRows(10))
	if code, _ := ctl(t, s, "GET", "/_fake/settings", ""); code != 404 || s.ControlURL() != "" {
		t.Fatalf("control endpoint without WithControlEndpoint: %d", code)
	}
}

func TestStartRefusesBadSettings(t *testing.T) {
	for _, st := range []Settings{
		{ResourceRows: map[string]int{"planets": 5}},
		{Faults: []FaultSpec{{Method: "get", Path: "/v1/agents"}}},
		{Faults: []FaultSpec{{Path: "/objects/*", Kind: "throttle"}}},
		{Faults: []FaultSpec{{Path: "/objects/*", Kind: "stall", Rate: 100}}},
		{Faults: []FaultSpec{{Path: "/objects/*", Kind: "slow"}}},
		{Entitlements: map[string]*Entitlement{"agents": {MaxRows: 0}}},
	} {
		if s, err := Start(WithSettings(st)); err == nil {
			s.Close()
			t.Errorf("Start(%+v) succeeded", st)
		} else if !strings.HasPrefix(err.Error(), "settings: ") {
			t.Errorf("Start: %v", err)
		}
	}
}

// Every kind has the name FaultSpec takes, and a throttle armed from JSON
// reads back with its rate.
func TestFaultKindNames(t *testing.T) {
	for k := Respond; k <= Throttle; k++ {
		spec := FaultSpec{Path: "/objects/*", Kind: k.String()}
		if k == Throttle {
			spec.Rate = 1 << 20
		}
		s, err := Start(WithSettings(Settings{Faults: []FaultSpec{spec}}))
		if err != nil {
			t.Fatalf("%v: %v", k, err)
		}
		s.mu.Lock()
		got := s.settingsLocked().Faults
		s.mu.Unlock()
		s.Close()
		if len(got) != 1 || got[0].Kind != k.String() || got[0].Rate != spec.Rate {
			t.Errorf("%v armed from %+v reads back as %+v", k, spec, got)
		}
	}
	if got := FaultKind(42).String(); got != "FaultKind(42)" {
		t.Errorf("FaultKind(42).String() = %q", got)
	}
}

func TestSetEntitlementPanicsOnUnknownColumns(t *testing.T) {
	s := NewServer(t, WithDefaultRows(10))
	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, `columns[1]: "nmae" is not a field of agents`) {
			t.Fatalf("panic %q", msg)
		}
	}()
	s.SetEntitlement(DefaultOrg, "agents", Entitlement{MaxRows: 5, Columns: []string{"id", "nmae"}})
}

func ptr[T any](v T) *T { return &v }

// waitJob polls a delivery job of the default caller until it ends.
func waitJob(t *testing.T, s *Server, id string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if j, ok := s.Job(id); ok && j.State != stateQueued && j.State != stateRunning {
			if j.State != stateCompleted {
				t.Fatalf("job %s ended %s", id, j.State)
			}
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("job %s did not end", id)
}

// TestControlEndpoint_RefusesBrowsers: what a web page can make a browser
// send cross-site (a form or text/plain POST, no preflight) and a request
// under a name a DNS rebinding points at the fake change nothing; the
// harness's own requests (JSON, to 127.0.0.1 or localhost) still work.
func TestControlEndpoint_RefusesBrowsers(t *testing.T) {
	s := NewServer(t, WithControlEndpoint())
	callers := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.callers)
	}
	armed := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.faults)
	}
	send := func(method, path, host, ctype, body string) int {
		t.Helper()
		req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
		if host != "" {
			req.Host = host
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		req.Header.Set("Origin", "https://evil.example")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	nCallers := callers()
	port := strings.TrimPrefix(s.URL, "http://127.0.0.1:")
	for _, tc := range []struct {
		host, ctype string
		want        int
	}{
		{"", "text/plain", 415},
		{"", "text/plain;charset=UTF-8", 415},
		{"", "application/x-www-form-urlencoded", 415},
		{"", "multipart/form-data; boundary=x", 415},
		{"", "", 415},
		{"evil.example:" + port, "application/json", 403},
		{"rebind.evil.example", "application/json", 403},
		{"10.1.2.3:" + port, "application/json", 403},
	} {
		if code := send("POST", "/_fake/callers", tc.host, tc.ctype, `{"orgId":"org_evil"}`); code != tc.want {
			t.Errorf("POST /_fake/callers Host %q Content-Type %q: %d, want %d", tc.host, tc.ctype, code, tc.want)
		}
		if code := send("POST", "/_fake/faults", tc.host, tc.ctype, `{"path":"/v1/agents","status":500,"times":-1}`); code != tc.want {
			t.Errorf("POST /_fake/faults Host %q Content-Type %q: %d, want %d", tc.host, tc.ctype, code, tc.want)
		}
	}
	if code := send("GET", "/_fake/settings", "evil.example:"+port, "", ""); code != 403 {
		t.Errorf("GET under a rebound name: %d, want 403", code)
	}
	if n := callers() - nCallers; n != 0 {
		t.Errorf("%d callers minted by refused requests", n)
	}
	if n := armed(); n != 0 {
		t.Errorf("%d faults armed by refused requests", n)
	}
	for _, host := range []string{"", "localhost:" + port, "LOCALHOST.:" + port, "[::1]:" + port} {
		if code := send("POST", "/_fake/callers", host, "application/json; charset=utf-8", `{}`); code != 201 {
			t.Errorf("POST /_fake/callers Host %q as JSON: %d, want 201", host, code)
		}
	}
	if n := callers() - nCallers; n != 4 {
		t.Errorf("%d callers minted by the harness's requests, want 4", n)
	}
}

func TestControlHostAllowed(t *testing.T) {
	lo, any4, any6, lan := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("0.0.0.0"), netip.MustParseAddr("::"), netip.MustParseAddr("192.168.1.5")
	for _, tc := range []struct {
		host   string
		served netip.Addr
		want   bool
	}{
		{"127.0.0.1:8080", lo, true},
		{"localhost:8080", lo, true},
		{"app.localhost", lo, true},
		{"[::1]:8080", lo, true},
		{"127.0.0.2", lo, true},
		{"192.168.1.5:8080", lo, false},
		{"evil.example:8080", lo, false},
		{"192.168.1.5:8080", lan, true},
		{"192.168.1.6:8080", lan, false},
		{"192.168.1.6:8080", any4, true},
		{"[fe80::1]:8080", any6, true},
		{"evil.example", any4, false},
		{"", lo, false},
	} {
		if got := controlHostAllowed(tc.host, tc.served); got != tc.want {
			t.Errorf("controlHostAllowed(%q, %v) = %v, want %v", tc.host, tc.served, got, tc.want)
		}
	}
}
