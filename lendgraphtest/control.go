package lendgraphtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
)

// Settings are the fake's settings as JSON, for harnesses in any language:
// what "lendgraph fake --config FILE" reads, what WithSettings applies at
// start, and what the control endpoint (PATCH /_fake/settings) and Apply
// change while the server runs. Every member is optional; unknown members
// are refused.
//
//	{"rows": 30000, "seed": 7, "credits": 5000,
//	 "entitlements": {"agents": {"maxRows": 2000, "columns": ["id", "fullName", "state"]}},
//	 "jobRate": {"delivery": 5000}, "linkTtl": "2m",
//	 "faults": [{"method": "POST", "path": "/v1/{resource}", "status": 429, "headers": {"Retry-After": "1"}}]}
type Settings struct {
	// Seed, Rows and ResourceRows shape the dataset (WithSeed,
	// WithDefaultRows, WithRows). They are fixed once the server runs:
	// Apply refuses them, as cursors, jobs and the search index would
	// otherwise describe a dataset that no longer exists. Start another
	// fake for another dataset (start-up is instant at any size).
	Seed         *int64         `json:"seed,omitempty"`
	Rows         *int           `json:"rows,omitempty"`
	ResourceRows map[string]int `json:"resourceRows,omitempty"`
	// Credits is the balance of every organization, and the starting
	// balance of those created later.
	Credits *float64 `json:"credits,omitempty"`
	// Entitlements are the default organization's bulk-delivery
	// entitlements, by resource; null removes one.
	Entitlements map[string]*Entitlement `json:"entitlements,omitempty"`
	// JobRate is the rows a second the workers of a job kind
	// ("enrichment", "delivery") handle.
	JobRate map[string]float64 `json:"jobRate,omitempty"`
	// LinkTTL is how long signed download links stay valid, as a Go
	// duration ("15m", "90s").
	LinkTTL string `json:"linkTtl,omitempty"`
	// ComputeDelay is how long a new most-gained query answers 202
	// computing ("0s" answers at once).
	ComputeDelay string `json:"computeDelay,omitempty"`
	// SearchTokenTTL is the lifetime of the search tokens minted from now.
	SearchTokenTTL string `json:"searchTokenTtl,omitempty"`
	// Faults are armed in order, after those already armed.
	Faults []FaultSpec `json:"faults,omitempty"`
}

// FaultSpec is an InjectFault call as JSON.
type FaultSpec struct {
	// Method is the request method to match; empty matches any.
	Method string `json:"method,omitempty"`
	// Path is the pattern, in InjectFault's syntax ("/v1/agents/{id}").
	Path string `json:"path"`
	// Kind is respond (the default), drop-before-response, drop-mid-body,
	// stall, trickle or throttle (see FaultKind).
	Kind    string            `json:"kind,omitempty"`
	Status  int               `json:"status,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
	// Delay is a Go duration: the stall, or the pause between trickled bytes.
	Delay string `json:"delay,omitempty"`
	// Rate is the bytes a second of a throttle.
	Rate int64 `json:"rate,omitempty"`
	// Times is how many matching requests get the fault (0 means 1, -1 every one).
	Times  int   `json:"times,omitempty"`
	Stream int64 `json:"stream,omitempty"`
}

// faultKindNames are the kinds' names, in FaultKind order: FaultSpec.Kind
// and FaultKind.String.
var faultKindNames = []string{"respond", "drop-before-response", "drop-mid-body", "stall", "trickle", "throttle"}

// String returns the kind's name as FaultSpec.Kind spells it
// ("drop-mid-body").
func (k FaultKind) String() string {
	if k >= 0 && int(k) < len(faultKindNames) {
		return faultKindNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", int(k))
}

// parse checks the spec and returns the fault it describes.
func (f FaultSpec) parse() (routePattern, Fault, error) {
	if err := checkMethod(f.Method); err != nil {
		return routePattern{}, Fault{}, fmt.Errorf("method: %v", err)
	}
	rp, err := compileRoute(f.Path)
	if err != nil {
		return routePattern{}, Fault{}, fmt.Errorf("path: %v", err)
	}
	kind := Respond
	if f.Kind != "" {
		k := slices.Index(faultKindNames, f.Kind)
		if k < 0 {
			return rp, Fault{}, fmt.Errorf("kind: %q is not one of %s", f.Kind, strings.Join(faultKindNames, ", "))
		}
		kind = FaultKind(k)
	}
	if f.Status != 0 && (f.Status < 100 || f.Status > 999) {
		return rp, Fault{}, fmt.Errorf("status: %d is not an HTTP status", f.Status)
	}
	if (kind == Throttle) != (f.Rate > 0) {
		return rp, Fault{}, fmt.Errorf("rate: %d: a throttle takes a rate in bytes a second, and only a throttle does", f.Rate)
	}
	if f.Times < -1 {
		return rp, Fault{}, fmt.Errorf("times: %d: use a count, or -1 for every request", f.Times)
	}
	delay, err := parseDuration("delay", f.Delay)
	if err != nil {
		return rp, Fault{}, err
	}
	return rp, Fault{Kind: kind, Status: f.Status, Header: f.Headers, Body: f.Body, Delay: delay, Rate: f.Rate, Times: f.Times, Stream: f.Stream}, nil
}

func parseDuration(name, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s: %q is not a duration like \"1.5s\" or \"15m\"", name, v)
	}
	return d, nil
}

// WithSettings applies settings as the server starts (Start fails on bad
// settings, naming the member).
func WithSettings(st Settings) Option {
	return func(c *config) { c.settings = append(c.settings, st) }
}

// startupOptions turns the dataset part of the settings into options.
func (st Settings) startupOptions() []Option {
	var opts []Option
	if st.Seed != nil {
		opts = append(opts, WithSeed(*st.Seed))
	}
	if st.Rows != nil {
		opts = append(opts, WithDefaultRows(*st.Rows))
	}
	for _, r := range slices.Sorted(maps.Keys(st.ResourceRows)) {
		opts = append(opts, WithRows(r, st.ResourceRows[r]))
	}
	return opts
}

// checkStartup validates the dataset part of the settings.
func (st Settings) checkStartup() error {
	if st.Rows != nil && *st.Rows < 0 {
		return fmt.Errorf("rows: %d is negative", *st.Rows)
	}
	for _, r := range slices.Sorted(maps.Keys(st.ResourceRows)) {
		if !knownResource(r) {
			return fmt.Errorf("resourceRows: unknown resource %q; resources: %s", r, strings.Join(Resources, ", "))
		}
		if st.ResourceRows[r] < 0 {
			return fmt.Errorf("resourceRows.%s: %d is negative", r, st.ResourceRows[r])
		}
	}
	return nil
}

// Apply changes the run-time settings: credits, the default
// organization's entitlements, job pace, link, compute and token
// lifetimes, and faults. Everything is checked first; on an error (which
// names the member) nothing changed. Seed and rows are refused: see
// Settings.
func (s *Server) Apply(st Settings) error {
	if st.Seed != nil || st.Rows != nil || st.ResourceRows != nil {
		return errors.New("seed, rows and resourceRows are fixed once the fake runs: start another one for another dataset")
	}
	return s.apply(st)
}

func (s *Server) apply(st Settings) error {
	if st.Credits != nil && *st.Credits < 0 {
		return fmt.Errorf("credits: %v is negative", *st.Credits)
	}
	for _, kind := range slices.Sorted(maps.Keys(st.JobRate)) {
		if !slices.Contains(jobKinds, kind) {
			return fmt.Errorf("jobRate: unknown job kind %q; kinds: %s", kind, strings.Join(jobKinds, ", "))
		}
	}
	var durs [3]time.Duration
	for i, d := range []struct{ name, v string }{{"linkTtl", st.LinkTTL}, {"computeDelay", st.ComputeDelay}, {"searchTokenTtl", st.SearchTokenTTL}} {
		var err error
		if durs[i], err = parseDuration(d.name, d.v); err != nil {
			return err
		}
	}
	if st.LinkTTL != "" && durs[0] == 0 || st.SearchTokenTTL != "" && durs[2] == 0 {
		return errors.New("linkTtl and searchTokenTtl must be longer than 0")
	}
	type armed struct {
		method string
		rp     routePattern
		f      Fault
	}
	var faults []armed
	for i, f := range st.Faults {
		rp, fault, err := f.parse()
		if err != nil {
			return fmt.Errorf("faults[%d].%v", i, err)
		}
		faults = append(faults, armed{f.Method, rp, fault})
	}
	for _, res := range slices.Sorted(maps.Keys(st.Entitlements)) {
		if e := st.Entitlements[res]; e != nil {
			if err := s.checkEntitlement(res, e); err != nil {
				return fmt.Errorf("entitlements.%s: %v", res, err)
			}
		} else if !slices.Contains(deliveryResources, res) {
			return fmt.Errorf("entitlements: %q offers no bulk delivery", res)
		}
	}
	// Everything checked: apply.
	for _, res := range slices.Sorted(maps.Keys(st.Entitlements)) {
		_ = s.setEntitlement(DefaultOrg, res, st.Entitlements[res])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.Credits != nil {
		s.cfg.credits = *st.Credits
		for _, o := range s.orgs {
			o.credits = *st.Credits
		}
	}
	for kind, rate := range st.JobRate {
		s.cfg.jobRate[kind] = rate
	}
	if st.LinkTTL != "" {
		s.cfg.linkTTL = durs[0]
	}
	if st.ComputeDelay != "" {
		s.area.computeDelay = durs[1]
	}
	if st.SearchTokenTTL != "" {
		s.area.searchTTL = durs[2]
	}
	for _, a := range faults {
		s.armLocked(a.method, a.rp, a.f)
	}
	return nil
}

// settingsLocked reads the current settings back.
func (s *Server) settingsLocked() Settings {
	seed := int64(s.data.seed)
	rows := s.cfg.defaultRows
	st := Settings{Seed: &seed, Rows: &rows, ResourceRows: map[string]int{}, JobRate: maps.Clone(s.cfg.jobRate),
		LinkTTL: s.cfg.linkTTL.String(), ComputeDelay: s.area.computeDelay.String(), SearchTokenTTL: s.area.searchTTL.String(),
		Entitlements: map[string]*Entitlement{}, Faults: []FaultSpec{}}
	for _, r := range Resources {
		st.ResourceRows[r] = s.data.Len(r)
	}
	o := s.orgLocked(DefaultOrg)
	credits := o.credits
	st.Credits = &credits
	for res, e := range o.entitlements {
		st.Entitlements[res] = &e
	}
	for _, r := range s.faults {
		f := r.fault
		st.Faults = append(st.Faults, FaultSpec{Method: r.method, Path: r.route.raw, Kind: f.Kind.String(), Status: f.Status,
			Headers: f.Header, Body: f.Body, Delay: durationText(f.Delay), Rate: f.Rate, Times: r.left, Stream: f.Stream})
	}
	return st
}

func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// --- the control endpoint ---

// ControlPrefix is where the control endpoint is served on the API's
// address (WithControlEndpoint): outside /v1, so no API route reaches it.
const ControlPrefix = "/_fake/"

// WithControlEndpoint serves the control endpoint under /_fake/ on the
// API's address, so a harness in any language can drive the fake over
// HTTP ("lendgraph fake" turns it on). It takes no key, and its requests
// are neither logged nor subject to injected faults. Every body is JSON;
// errors are 400 {"error": "..."} naming the member.
//
// As it takes no key, it refuses what a web page in a browser beside it
// could send: a POST, PUT or PATCH without "Content-Type:
// application/json" (a cross-site form or text/plain request) answers
// 415, and a Host header naming anything but "localhost", a loopback
// address or the address the server listens on (any of the machine's
// addresses when it listens on all of them) answers 403: a name a DNS
// rebinding points here is refused. GET /_fake/ lists the routes:
//
//	GET    /_fake/settings                       current Settings
//	PATCH  /_fake/settings                       apply Settings (run-time members)
//	GET    /_fake/orgs/{org}                     balance and entitlements
//	PUT    /_fake/orgs/{org}/credits             {"credits": 500}
//	PUT    /_fake/orgs/{org}/entitlements/{res}  {"maxRows": 2000, "columns": [...], "filters": {...}}
//	DELETE /_fake/orgs/{org}/entitlements/{res}  remove it
//	GET    /_fake/orgs/{org}/ledger              {"orgId", "credits", "debits": [{id, userId, reason, amount, at}]}
//	GET    /_fake/faults                         armed faults (times left)
//	POST   /_fake/faults                         arm a FaultSpec, or an array of them
//	DELETE /_fake/faults                         disarm every fault
//	GET    /_fake/requests?method=&path=&listener=  the request log, oldest first (keys redacted)
//	DELETE /_fake/requests                       forget the request log
//	GET    /_fake/jobs                           every job: id, kind, state, processed, counters
//	POST   /_fake/callers                        {"orgId": "org_x"}: a new key in that organization
//	POST   /_fake/clock                          {"advance": "24h"}: move the server's clock
func WithControlEndpoint() Option {
	return func(c *config) { c.control = true }
}

// ControlURL is the control endpoint's address (base URL + "/_fake"), or
// "" when the server runs without WithControlEndpoint.
func (s *Server) ControlURL() string {
	if !s.cfg.control {
		return ""
	}
	return s.URL + strings.TrimSuffix(ControlPrefix, "/")
}

var controlRoutes = []string{
	"GET /_fake/settings", "PATCH /_fake/settings",
	"GET /_fake/orgs/{org}", "PUT /_fake/orgs/{org}/credits",
	"PUT /_fake/orgs/{org}/entitlements/{resource}", "DELETE /_fake/orgs/{org}/entitlements/{resource}",
	"GET /_fake/orgs/{org}/ledger",
	"GET /_fake/faults", "POST /_fake/faults", "DELETE /_fake/faults",
	"GET /_fake/requests", "DELETE /_fake/requests",
	"GET /_fake/jobs", "POST /_fake/callers", "POST /_fake/clock",
}

// controlHandler serves the control endpoint behind the checks that keep
// a web page from driving it (see WithControlEndpoint).
func (s *Server) controlHandler() http.Handler {
	mux := s.controlMux()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var served netip.Addr // the address the API listens on
		if ta, ok := s.api.Listener.Addr().(*net.TCPAddr); ok {
			served = ta.AddrPort().Addr().Unmap()
		}
		if !controlHostAllowed(r.Host, served) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("Host %q: the control endpoint answers only requests to localhost or the address it listens on, never to a name a web page could point here", r.Host), nil)
			return
		}
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q: send the body as application/json (the control endpoint refuses what a cross-site form can send)", r.Header.Get("Content-Type")), nil)
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// controlHostAllowed tells whether a request's Host (with or without a
// port) may reach the control endpoint of a server listening on served:
// "localhost" and names under it, a loopback address, served itself, or,
// when served is unspecified (every interface), any IP address. A DNS
// rebinding attack reaches the server under a name of its own, which is
// refused.
func controlHostAllowed(host string, served netip.Addr) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	return ip.IsLoopback() || ip == served || served.IsUnspecified()
}

func (s *Server) controlMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_fake/{$}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"routes": controlRoutes, "baseUrl": s.URL,
			"storageUrl": s.StorageURL(), "searchHost": s.SearchHostURL()})
	})
	mux.HandleFunc("GET /_fake/settings", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		st := s.settingsLocked()
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, st)
	})
	mux.HandleFunc("PATCH /_fake/settings", func(w http.ResponseWriter, r *http.Request) {
		var st Settings
		if !readStrict(w, r, &st) {
			return
		}
		if err := s.Apply(st); err != nil {
			writeError(w, http.StatusBadRequest, err.Error(), nil)
			return
		}
		s.mu.Lock()
		st = s.settingsLocked()
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, st)
	})
	mux.HandleFunc("GET /_fake/orgs/{org}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.orgView(r.PathValue("org")))
	})
	mux.HandleFunc("PUT /_fake/orgs/{org}/credits", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Credits *float64 `json:"credits"`
		}
		if !readStrict(w, r, &body) {
			return
		}
		if body.Credits == nil || *body.Credits < 0 {
			writeError(w, http.StatusBadRequest, `credits: give the balance, {"credits": 500}, 0 or more`, nil)
			return
		}
		s.SetCredits(r.PathValue("org"), *body.Credits)
		writeJSON(w, http.StatusOK, s.orgView(r.PathValue("org")))
	})
	mux.HandleFunc("PUT /_fake/orgs/{org}/entitlements/{resource}", func(w http.ResponseWriter, r *http.Request) {
		var e Entitlement
		if !readStrict(w, r, &e) {
			return
		}
		if err := s.setEntitlement(r.PathValue("org"), r.PathValue("resource"), &e); err != nil {
			writeError(w, http.StatusBadRequest, err.Error(), nil)
			return
		}
		writeJSON(w, http.StatusOK, s.orgView(r.PathValue("org")))
	})
	mux.HandleFunc("DELETE /_fake/orgs/{org}/entitlements/{resource}", func(w http.ResponseWriter, r *http.Request) {
		if err := s.setEntitlement(r.PathValue("org"), r.PathValue("resource"), nil); err != nil {
			writeError(w, http.StatusBadRequest, err.Error(), nil)
			return
		}
		writeJSON(w, http.StatusOK, s.orgView(r.PathValue("org")))
	})
	mux.HandleFunc("GET /_fake/orgs/{org}/ledger", func(w http.ResponseWriter, r *http.Request) {
		org := r.PathValue("org")
		debits := []map[string]any{}
		for _, d := range s.Debits(org) {
			debits = append(debits, map[string]any{"id": d.ID, "userId": d.UserID, "reason": d.Reason, "amount": d.Amount,
				"at": d.At.UTC().Format(time.RFC3339Nano)})
		}
		writeJSON(w, http.StatusOK, map[string]any{"orgId": org, "credits": s.Credits(org), "debits": debits})
	})
	mux.HandleFunc("GET /_fake/faults", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		st := s.settingsLocked()
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"faults": st.Faults})
	})
	mux.HandleFunc("POST /_fake/faults", func(w http.ResponseWriter, r *http.Request) {
		b, ok := readBody(w, r)
		if !ok {
			return
		}
		var specs []FaultSpec
		if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
			ok = decodeStrict(w, b, &specs)
		} else {
			var one FaultSpec
			ok = decodeStrict(w, b, &one)
			specs = []FaultSpec{one}
		}
		if !ok {
			return
		}
		if err := s.apply(Settings{Faults: specs}); err != nil {
			writeError(w, http.StatusBadRequest, err.Error(), nil)
			return
		}
		writeJSON(w, http.StatusCreated, map[string]any{"armed": len(specs)})
	})
	mux.HandleFunc("DELETE /_fake/faults", func(w http.ResponseWriter, r *http.Request) {
		s.ClearFaults()
		writeJSON(w, http.StatusOK, map[string]any{"faults": []FaultSpec{}})
	})
	mux.HandleFunc("GET /_fake/requests", s.controlRequests)
	mux.HandleFunc("DELETE /_fake/requests", func(w http.ResponseWriter, r *http.Request) {
		s.ResetRequests()
		writeJSON(w, http.StatusOK, map[string]any{"requests": []any{}})
	})
	mux.HandleFunc("GET /_fake/jobs", func(w http.ResponseWriter, r *http.Request) {
		jobs := s.Jobs()
		sort.Slice(jobs, func(i, j int) bool { return jobs[i].ID < jobs[j].ID })
		out := []map[string]any{}
		for _, j := range jobs {
			out = append(out, map[string]any{"id": j.ID, "kind": j.Kind, "state": j.State, "userId": j.Owner.UserID,
				"orgId": j.Owner.OrgID, "processed": j.Processed, "counters": j.Counters})
		}
		writeJSON(w, http.StatusOK, map[string]any{"jobs": out})
	})
	mux.HandleFunc("POST /_fake/callers", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			OrgID string `json:"orgId"`
		}
		if !readStrict(w, r, &body) {
			return
		}
		if body.OrgID == "" {
			body.OrgID = DefaultOrg
		}
		c := s.NewCaller(body.OrgID)
		writeJSON(w, http.StatusCreated, map[string]any{"key": c.Key, "userId": c.UserID, "orgId": c.OrgID})
	})
	mux.HandleFunc("POST /_fake/clock", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Advance string `json:"advance"`
		}
		if !readStrict(w, r, &body) {
			return
		}
		d, err := parseDuration("advance", body.Advance)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error(), nil)
			return
		}
		s.Advance(d)
		writeJSON(w, http.StatusOK, map[string]any{"now": s.Now().UTC().Format(time.RFC3339Nano)})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no control route "+r.Method+" "+r.URL.Path+"; GET "+ControlPrefix+" lists them", nil)
	})
	return mux
}

// orgView is an organization's balance and entitlements.
func (s *Server) orgView(id string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.orgLocked(id)
	return map[string]any{"orgId": id, "credits": o.credits, "entitlements": maps.Clone(o.entitlements)}
}

// redactedHeaders are request headers that carry credentials.
var redactedHeaders = []string{"X-Api-Key", "Authorization"}

// controlRequests answers the request log, filtered by method, listener
// and path pattern (InjectFault's syntax).
func (s *Server) controlRequests(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	method, listener := q.Get("method"), q.Get("listener")
	if err := checkMethod(method); err != nil {
		writeError(w, http.StatusBadRequest, "method: "+err.Error(), nil)
		return
	}
	rp, err := compileRoute(q.Get("path"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "path: "+err.Error(), nil)
		return
	}
	out := []map[string]any{}
	for _, req := range s.Requests() {
		if method != "" && req.Method != method || listener != "" && req.Listener != listener || !rp.match(req.Path) {
			continue
		}
		h := map[string]string{}
		for k := range req.Header {
			h[k] = req.Header.Get(k)
			if slices.Contains(redactedHeaders, k) {
				h[k] = "[redacted]"
			}
		}
		out = append(out, map[string]any{"listener": req.Listener, "method": req.Method, "path": req.Path, "query": redactQuery(req.Query),
			"headers": h, "body": string(req.Body), "at": req.At.UTC().Format(time.RFC3339Nano)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "requests": out})
}

// redactQuery hides a signed link's signature in a logged query string.
func redactQuery(raw string) string {
	q, err := url.ParseQuery(raw)
	if err != nil || !q.Has("X-Signature") {
		return raw
	}
	q.Set("X-Signature", "[redacted]")
	return q.Encode()
}

// readStrict decodes a JSON body into v, refusing unknown members (a typo
// in a harness's settings fails loudly); it answers 400 itself.
func readStrict(w http.ResponseWriter, r *http.Request, v any) bool {
	b, ok := readBody(w, r)
	return ok && decodeStrict(w, b, v)
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading body: "+err.Error(), nil)
		return nil, false
	}
	return b, true
}

func decodeStrict(w http.ResponseWriter, b []byte, v any) bool {
	if err := decodeStrictJSON(b, v); err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), nil)
		return false
	}
	return true
}

// decodeStrictJSON decodes one JSON value; unknown members are an error,
// and so is anything after the value.
func decodeStrictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty body: send a JSON value")
		}
		return fmt.Errorf("invalid JSON: %v", err)
	}
	if dec.More() {
		return errors.New("invalid JSON: more than one value")
	}
	return nil
}
