package lendgraph_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// jobsOf counts the jobs of a kind the fake holds.
func jobsOf(srv *lendgraphtest.Server, kind string) int {
	n := 0
	for _, j := range srv.Jobs() {
		if j.Kind == kind {
			n++
		}
	}
	return n
}

// TestTransport_OutcomeUnknownOrNothingHappened (item 12): every
// failure of a call that charges or acts says whether the request may have
// reached the server (errors.Is ErrOutcomeUnknown) or certainly did not.
// A fault proxy sits between the client and the fake, which counts the
// requests, jobs and charges that reached it.
func TestTransport_OutcomeUnknownOrNothingHappened(t *testing.T) {
	noLeaks(t)
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(300))
	proxy := newFaultProxy(t)
	c := proxy.Client(srv)
	match := idsWith(t, srv, lendgraphtest.OutcomeMatch, 4) // bulk: the first two; single: the others
	deliverReq := &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 10}
	const submit = "/v1/agents/bulk-delivery"
	for _, tc := range []struct {
		name    string
		fault   proxyFault
		unknown bool
		jobs    int // created at the fake
		ok      bool
	}{
		{"reset after the server acted", proxyFault{Kind: pfResetAfter}, true, 1, false},
		{"202 body cut", proxyFault{Kind: pfCutBody}, true, 1, false},
		// A 502 is "failed to launch; safe to retry" by the reference's
		// word: retried (1+3 attempts), and the caller is told nothing
		// happened. A gateway's 502 after the server acted defeats that;
		// only the API can tell the two apart.
		{"502 from a gateway after the server acted", proxyFault{Kind: pf502After}, false, 4, false},
		{"reset before the server saw it (the client cannot tell)", proxyFault{Kind: pfResetBefore}, true, 0, false},
		{"503 from a gateway", proxyFault{Kind: pf503}, true, 0, false},
		{"429 once", proxyFault{Kind: pf429}, false, 1, true},
	} {
		t.Run("Deliver/"+tc.name, func(t *testing.T) {
			before := jobsOf(srv, "delivery")
			n := 1
			if tc.fault.Kind == pf502After {
				n = -1
			}
			proxy.SetScript(firstN("POST", submit, n, tc.fault))
			defer proxy.SetScript(nil)
			_, err := c.Agents.Deliver(context.Background(), deliverReq)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
			if err != nil && errors.Is(err, lendgraph.ErrOutcomeUnknown) != tc.unknown {
				t.Fatalf("errors.Is(err, ErrOutcomeUnknown) = %v, want %v: %v", !tc.unknown, tc.unknown, err)
			}
			if got := jobsOf(srv, "delivery") - before; got != tc.jobs {
				t.Fatalf("%d jobs created at the fake, want %d", got, tc.jobs)
			}
		})
	}

	t.Run("Deliver/connection refused", func(t *testing.T) {
		cc, err := lendgraph.NewClient(lendgraph.WithAPIKey(srv.DefaultCaller().Key), lendgraph.WithBaseURL("http://"+closedAddr(t)),
			lendgraph.WithMaxRetries(1), lendgraph.WithRetryBackoff(time.Millisecond, time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cc.Agents.Deliver(context.Background(), deliverReq); err == nil || errors.Is(err, lendgraph.ErrOutcomeUnknown) {
			t.Fatalf("nothing was sent, yet: %v", err)
		}
	})
	t.Run("Deliver/context ended before sending", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.Agents.Deliver(ctx, deliverReq); !errors.Is(err, context.Canceled) || errors.Is(err, lendgraph.ErrOutcomeUnknown) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("Deliver/context ended in flight", func(t *testing.T) {
		before := jobsOf(srv, "delivery")
		proxy.SetScript(firstN("POST", submit, 1, proxyFault{Kind: pfStallHead, Delay: 10 * time.Second}))
		defer proxy.SetScript(nil)
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		_, err := c.Agents.Deliver(ctx, deliverReq)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, lendgraph.ErrOutcomeUnknown) {
			t.Fatalf("%v", err)
		}
		if got := jobsOf(srv, "delivery") - before; got != 1 {
			t.Fatalf("%d jobs, want 1 (the server acted)", got)
		}
	})
	t.Run("Deliver/402", func(t *testing.T) {
		srv.SetCredits(lendgraphtest.DefaultOrg, 0)
		defer srv.SetCredits(lendgraphtest.DefaultOrg, 1e6)
		if _, err := c.Agents.Deliver(context.Background(), deliverReq); !errors.Is(err, lendgraph.ErrInsufficientCredits) || errors.Is(err, lendgraph.ErrOutcomeUnknown) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("EnrichBulk/reset after the server acted", func(t *testing.T) {
		before := jobsOf(srv, "enrichment")
		proxy.SetScript(firstN("POST", "/v1/properties/enrich-bulk", 1, proxyFault{Kind: pfResetAfter}))
		defer proxy.SetScript(nil)
		_, err := c.Properties.EnrichBulk(context.Background(), match[:2], nil)
		var te *lendgraph.TransportError
		if !errors.Is(err, lendgraph.ErrOutcomeUnknown) || !errors.As(err, &te) {
			t.Fatalf("%v", err)
		}
		if got := jobsOf(srv, "enrichment") - before; got != 1 {
			t.Fatalf("%d jobs, want 1", got)
		}
	})
	t.Run("Enrich with refresh/answer cut", func(t *testing.T) {
		srv.ResetRequests()
		d0, _ := debits(srv, lendgraphtest.DefaultOrg, "enrich")
		proxy.SetScript(firstN("POST", "/v1/properties/*", 1, proxyFault{Kind: pfCutBody}))
		defer proxy.SetScript(nil)
		_, err := c.Properties.Enrich(context.Background(), match[2], &lendgraph.EnrichRequest{Refresh: true})
		var de *lendgraph.DecodeError
		if !errors.Is(err, lendgraph.ErrOutcomeUnknown) || !errors.As(err, &de) {
			t.Fatalf("%v", err)
		}
		d1, _ := debits(srv, lendgraphtest.DefaultOrg, "enrich")
		if n := srv.CountRequests("POST", "/v1/properties/*/enrich"); n != 1 || d1-d0 != 1 {
			t.Fatalf("%d requests, %d debits; want 1 and 1", n, d1-d0)
		}
	})
	t.Run("Enrich without refresh/reset after the server acted", func(t *testing.T) {
		// Enrichment rule 2: the repeat is a free cache hit, so the call is
		// retried and the result paid for is not lost.
		srv.ResetRequests()
		d0, _ := debits(srv, lendgraphtest.DefaultOrg, "enrich")
		proxy.SetScript(firstN("POST", "/v1/properties/*", 1, proxyFault{Kind: pfResetAfter}))
		defer proxy.SetScript(nil)
		r, err := c.Properties.Enrich(context.Background(), match[3], nil)
		if err != nil || len(r.Data.Persons) == 0 || r.Reason != lendgraph.ReasonMemberCacheHit {
			t.Fatalf("%+v, %v", r, err)
		}
		d1, _ := debits(srv, lendgraphtest.DefaultOrg, "enrich")
		if n := srv.CountRequests("POST", "/v1/properties/*/enrich"); n != 2 || d1-d0 != 1 {
			t.Fatalf("%d requests, %d debits; want 2 and 1", n, d1-d0)
		}
	})
	t.Run("PushCRMBatched/reset after the server acted", func(t *testing.T) {
		ids := make([]string, 150)
		for i := range ids {
			ids[i] = srv.Dataset().ID("agents", i)
		}
		proxy.SetScript(func(r *http.Request, _ int) proxyFault {
			if r.Method == "POST" && r.URL.Path == "/v1/integrations/crm/push" {
				return proxyFault{Kind: pfResetAfter}
			}
			return proxyFault{}
		})
		defer proxy.SetScript(nil)
		_, err := c.Integrations.PushCRMBatched(context.Background(), &lendgraph.PushCRMRequest{Entity: lendgraph.CRMEntityAgent,
			Object: lendgraph.CRMObjectContact, IDs: ids})
		var pe *lendgraph.PushIncompleteError
		if !errors.As(err, &pe) || len(pe.Unknown) != 100 || len(pe.NotSent) != 50 || !errors.Is(err, lendgraph.ErrOutcomeUnknown) {
			t.Fatalf("%v", err)
		}
	})
}

func TestTransport_APIKeyHeader(t *testing.T) {
	srv := smallServer(t)
	if _, err := srv.Client().Agents.List(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if r.Header.Get("X-Api-Key") != srv.DefaultCaller().Key || r.Header.Get("Authorization") != "" {
		t.Fatalf("headers %v", r.Header)
	}
}

func TestTransport_NothingLoggedByDefault(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(old)
	srv := smallServer(t)
	srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503})
	if _, err := srv.Client().Agents.List(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Fatalf("logged without WithLogger: %s", buf.String())
	}
}

// printAll formats v with every verb a user (or a logger) might use.
func printAll(v any) string {
	var b strings.Builder
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		fmt.Fprintf(&b, f+"\n", v)
	}
	var js bytes.Buffer
	slog.New(slog.NewJSONHandler(&js, nil)).Info("x", "v", v)
	slog.New(slog.NewTextHandler(&js, nil)).Info("x", "v", v)
	return b.String() + js.String()
}

// loopbackDialer sends every host name to 127.0.0.1, keeping the port, so
// tests can use names that look like the API host.
func loopbackDialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, _ := net.SplitHostPort(addr)
		return d.DialContext(ctx, network, "127.0.0.1:"+port)
	}
}

// TestTransport_CredentialsStayHome: each credential goes to its own host
// only, the API key to the API origin, the search token to the search host
// a token names, a link's signature to the storage host, and none of them
// is ever printed. Three tables: redirects (no credential or body follows a
// redirect off its origin; refused where following would re-send a body or
// drop to plain http), hosts that echo a credential back (the error, its
// fields and the debug log quote none), and the fake's whole flow with
// every value a user could print (the storage and search hosts never see
// the key; no print, log, error or panic shows a secret).
func TestTransport_CredentialsStayHome(t *testing.T) {
	t.Run("redirect", func(t *testing.T) {
		for _, tc := range redirectRows() {
			t.Run(tc.name(), func(t *testing.T) { tc.run(t) })
		}
	})
	t.Run("echo", func(t *testing.T) {
		for _, tc := range echoRows() {
			for _, bearer := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/bearer=%v", tc.host, tc.name, bearer), func(t *testing.T) { tc.run(t, bearer) })
			}
		}
	})
	t.Run("fake", func(t *testing.T) {
		for _, bearer := range []bool{false, true} {
			t.Run(fmt.Sprintf("bearer=%v", bearer), func(t *testing.T) { secretsInFakeFlow(t, bearer) })
		}
	})
}

// redirectRow is a host redirecting one call of the SDK.
type redirectRow struct {
	from     string // "api" or "search": the host that redirects, whose credential the request carries
	to       string // "other host", "subdomain", "parent-named", "other port", "same origin", "plain http"
	code     int
	call     string // "get", "list" (a POST), "do" (a POST through Client.Do), "search"
	bearer   bool
	insecure bool // WithInsecureHTTPLinks
}

func (r redirectRow) name() string {
	return fmt.Sprintf("%s/%s/%d/%s/bearer=%v/insecure=%v", r.from, r.to, r.code, r.call, r.bearer, r.insecure)
}

// followed reports whether the SDK follows the redirect: not a POST that
// a 307 or 308 would re-send to another origin, not plain http under an
// https API unless WithInsecureHTTPLinks.
func (r redirectRow) followed() bool {
	post := r.call == "list" || r.call == "do" || r.call == "search"
	switch {
	case r.to == "plain http" && r.from == "api":
		return r.insecure
	case r.to != "same origin" && post && (r.code == http.StatusTemporaryRedirect || r.code == http.StatusPermanentRedirect):
		return false
	}
	return true
}

func redirectRows() []redirectRow {
	var rows []redirectRow
	for _, bearer := range []bool{false, true} {
		for _, to := range []string{"other host", "subdomain", "parent-named", "other port"} {
			for _, code := range []int{http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
				for _, call := range []string{"get", "list", "do"} {
					rows = append(rows, redirectRow{from: "api", to: to, code: code, call: call, bearer: bearer})
				}
			}
		}
		for _, call := range []string{"get", "list"} {
			for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect} {
				rows = append(rows, redirectRow{from: "api", to: "same origin", code: code, call: call, bearer: bearer})
			}
		}
		for _, insecure := range []bool{false, true} {
			rows = append(rows, redirectRow{from: "api", to: "plain http", code: http.StatusMovedPermanently, call: "get", bearer: bearer, insecure: insecure})
		}
	}
	for _, to := range []string{"other host", "subdomain", "other port", "plain http"} {
		rows = append(rows, redirectRow{from: "search", to: to, code: http.StatusFound, call: "search"})
	}
	return rows
}

func (r redirectRow) run(t *testing.T) {
	const key = "lg_secret_redirect_key"
	const token = "tok_secret_redirect_token"
	const answer = `{"id":"x","data":[],"hits":[],"query":"jo","processingTimeMs":1,"limit":20,"offset":0,"estimatedTotalHits":0}`
	ok := func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, answer) }
	other := newRecorder(t, false, ok)
	tls := r.to == "plain http" // the redirecting host is https, the target plain http
	var from *recorder
	var fromHost string // host:port the credential belongs to
	var target string
	from = newRecorder(t, tls, func(w http.ResponseWriter, req *http.Request) {
		if req.Host != fromHost || strings.HasPrefix(req.URL.Path, "/r/") {
			ok(w, req) // another name for this listener, or the redirect's same-origin target
			return
		}
		http.Redirect(w, req, target+"/r"+req.URL.Path, r.code)
	})
	name := r.from + ".lendgraph.test"
	fromHost = name + ":" + from.port
	fromURL := "http://" + fromHost
	tr := &http.Transport{DialContext: loopbackDialer()}
	if tls {
		fromHost = strings.TrimPrefix(from.URL, "https://")
		fromURL = from.URL
		tr = from.Client().Transport.(*http.Transport).Clone()
		tr.DialContext = loopbackDialer()
	}
	defer tr.CloseIdleConnections()
	target = map[string]string{
		"other host":   "http://other.test:" + other.port,
		"subdomain":    "http://evil." + name + ":" + from.port,
		"parent-named": "http://" + name + ".evil.test:" + other.port,
		"other port":   "http://" + name + ":" + other.port,
		"same origin":  fromURL,
		"plain http":   "http://127.0.0.1:" + other.port,
	}[r.to]

	apiURL := fromURL
	if r.from == "search" {
		api := newRecorder(t, false, func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, `{"token":%q,"host":%q,"indexes":["agents"],"expiresAt":%q}`,
				token, fromURL, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
		})
		apiURL = "http://api.lendgraph.test:" + api.port
	}
	rec := &recObserver{}
	opts := []lendgraph.Option{lendgraph.WithAPIKey(key), lendgraph.WithBaseURL(apiURL), lendgraph.WithHTTPClient(&http.Client{Transport: tr}),
		lendgraph.WithObserver(rec)}
	if r.bearer {
		opts = append(opts, lendgraph.WithBearerAuth())
	}
	if r.insecure {
		opts = append(opts, lendgraph.WithInsecureHTTPLinks())
	}
	c, err := lendgraph.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	switch r.call {
	case "get":
		_, err = c.Agents.Get(ctx, "x")
	case "list":
		_, err = c.Agents.List(ctx, &lendgraph.ListRequest{FlatFilters: map[string]any{"state": "CA"}})
	case "do":
		err = c.Do(ctx, http.MethodPost, "/v1/agents", map[string]any{"state": "CA"}, nil)
	case "search":
		_, err = c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
	}

	// The credential the redirecting host must get, and nobody else.
	credential := func(h http.Header) string {
		return h.Get("X-Api-Key") + h.Get("Authorization")
	}
	var home, away []seen
	for _, s := range append(from.requests(), other.requests()...) {
		if s.host == fromHost {
			home = append(home, s)
		} else {
			away = append(away, s)
		}
	}
	var first []seen // the requests the SDK sent itself, before any redirect
	for _, s := range home {
		if !strings.HasPrefix(s.path, "/r/") {
			first = append(first, s)
		}
		if credential(s.header) == "" {
			t.Errorf("the %s host got no credential: %v", r.from, s.header)
		}
	}
	if r.from == "api" && len(first) != 1 {
		t.Errorf("the API got %d requests, want 1 (a refused redirect is not retried)", len(first))
	}
	for _, s := range away {
		if c := credential(s.header); c != "" {
			t.Errorf("credential sent to %s: %q", s.host, c)
		}
		if tp := s.header.Get("Traceparent"); tp != "" {
			t.Errorf("trace context sent to %s: %q", s.host, tp)
		}
		if len(s.body) > 0 {
			t.Errorf("body sent to %s: %q", s.host, s.body)
		}
	}
	for _, s := range append(home, away...) {
		if r.from == "search" && strings.Contains(fmt.Sprint(s.header), key) {
			t.Errorf("API key sent to the search side (%s): %v", s.host, s.header)
		}
	}
	for _, s := range first {
		if r.from == "api" && s.header.Get("Traceparent") == "" {
			t.Errorf("no trace context sent to the API host: %v", s.header)
		}
	}
	rec.check(t)
	for _, secret := range []string{key, token} {
		if strings.Contains(rec.text(), secret) {
			t.Errorf("a credential reached the observer:\n%s", rec.text())
		}
	}
	followedTo := len(away)
	if r.to == "same origin" {
		followedTo = len(home) - len(first)
	}
	if r.from == "search" {
		if followedTo == 0 {
			t.Errorf("the redirect was not followed: %v", err)
		}
		return
	}
	if want := r.followed(); (followedTo == 1) != want || (err == nil) != want {
		t.Fatalf("%d requests at the target, err %v; want followed=%v", followedTo, err, want)
	}
	if !r.followed() && !strings.Contains(err.Error(), "redirect") {
		t.Errorf("err = %v, want it to name the refused redirect", err)
	}
	if r.to == "plain http" && !r.insecure && !errors.Is(err, lendgraph.ErrUnsafeLink) {
		t.Errorf("err = %v, want ErrUnsafeLink", err)
	}
}

// echoRow is a host that echoes a credential back: in a header, a body,
// a redirect's address, or an error that quotes the address.
type echoRow struct {
	host  string // "api", "storage", "search", "api-link" (the API host serving a results link): the host that misbehaves
	name  string
	serve func(w http.ResponseWriter, r *http.Request, credential string) // nil: nothing listens
}

// The secrets the echo rows use.
const (
	echoToken     = "tok_hostile_0123456789abcdef"
	echoSignature = "5f2b9e0c8d7a6b4e3f1a0c9d8e7b6a5f"
)

func echoRows() []echoRow {
	dropped := func(http.ResponseWriter, *http.Request, string) { panic(http.ErrAbortHandler) }
	return []echoRow{
		{"api", "X-Request-Id on a 401", func(w http.ResponseWriter, r *http.Request, k string) {
			w.Header().Set("X-Request-Id", "req-"+k)
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":"invalid key %s"}`, k)
		}},
		{"api", "X-Request-Id on an HTML 200", func(w http.ResponseWriter, r *http.Request, k string) {
			w.Header().Set("X-Request-Id", "req-"+k)
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html>captive portal</html>")
		}},
		{"api", "Content-Type", func(w http.ResponseWriter, r *http.Request, k string) {
			w.Header().Set("Content-Type", "text/html; key="+k)
			fmt.Fprint(w, "<html>captive portal</html>")
		}},
		{"api", "redirect Location", func(w http.ResponseWriter, r *http.Request, k string) {
			if k == "" { // a redirected request: the key is not sent there
				k = hostileKey
			}
			http.Redirect(w, r, "/k/"+k+"/"+strconv.Itoa(len(r.URL.Path)), http.StatusFound)
		}},
		{"api", "connection dropped", dropped},
		{"api", "nothing listens, a signature in the query", nil},
		{"storage", "Content-Type", func(w http.ResponseWriter, r *http.Request, sig string) {
			w.Header().Set("Content-Type", "text/html; sig="+sig)
			fmt.Fprint(w, "<html>a portal page, not the file</html>")
		}},
		{"storage", "Content-Range", func(w http.ResponseWriter, r *http.Request, sig string) {
			w.Header().Set("Content-Range", "bytes "+sig)
			w.WriteHeader(http.StatusPartialContent)
		}},
		{"storage", "403 body", func(w http.ResponseWriter, r *http.Request, sig string) { // as S3's SignatureDoesNotMatch
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, "<Error><Code>SignatureDoesNotMatch</Code><SignatureProvided>%s</SignatureProvided></Error>", sig)
		}},
		{"storage", "connection dropped", dropped},
		{"storage", "403 whose Code is the signature", func(w http.ResponseWriter, r *http.Request, sig string) {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, "<Error><Code>%s</Code></Error>", sig)
		}},
		{"api-link", "X-Request-Id of a link served from the API host", func(w http.ResponseWriter, r *http.Request, sig string) {
			w.Header().Set("X-Request-Id", "req-"+sig)
			w.WriteHeader(http.StatusForbidden)
		}},
		{"search", "redirect Location", func(w http.ResponseWriter, r *http.Request, tok string) {
			http.Redirect(w, r, "/t/"+echoToken+"/"+strconv.Itoa(len(r.URL.Path)), http.StatusFound)
		}},
		{"search", "HTML 200", func(w http.ResponseWriter, r *http.Request, tok string) {
			w.Header().Set("Content-Type", "text/html; t="+echoToken)
			fmt.Fprintf(w, "<html>%s</html>", tok)
		}},
		{"search", "401 body", func(w http.ResponseWriter, r *http.Request, tok string) {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"message":"bad token %s","code":"invalid_api_key"}`, tok)
		}},
		{"search", "403", func(w http.ResponseWriter, r *http.Request, tok string) {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"message":"expired","code":"invalid_api_key","type":"auth","link":""}`)
		}},
		{"search", "500 body", func(w http.ResponseWriter, r *http.Request, tok string) {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"message":"bad token %s","code":"x"}`, tok)
		}},
		{"search", "500 not JSON", func(w http.ResponseWriter, r *http.Request, tok string) {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `<html>%s</html>`, tok)
		}},
	}
}

func (e echoRow) run(t *testing.T, bearer bool) {
	// credential is what the request carried, whatever the auth style; for
	// the storage host, the link's signature.
	credential := func(r *http.Request) string {
		switch e.host {
		case "storage", "api-link":
			return r.URL.Query().Get("X-Signature")
		case "search":
			return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		return r.Header.Get("x-api-key") + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	var hostile *recorder
	if e.serve != nil {
		hostile = newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) { e.serve(w, r, credential(r)) })
	}
	api := hostile
	if e.host == "api-link" {
		// The API host answers the status itself and serves the link too.
		var self *recorder
		self = newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/v1/") {
				fmt.Fprintf(w, `{"jobId":"dlv_1","status":"completed","format":"ndjson","bytes":100,"resultsUrl":%q}`,
					self.URL+"/f?X-Expires=1&X-Signature="+echoSignature)
				return
			}
			e.serve(w, r, credential(r))
		})
		api = self
	} else if e.host != "api" {
		api = newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/search-token" {
				fmt.Fprintf(w, `{"token":%q,"host":%q,"indexes":["agents"],"expiresAt":%q}`,
					echoToken, hostile.URL, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
				return
			}
			fmt.Fprintf(w, `{"jobId":"dlv_1","status":"completed","format":"ndjson","bytes":100,"resultsUrl":%q}`,
				hostile.URL+"/f?X-Expires=1&X-Signature="+echoSignature)
		})
	}
	var logs bytes.Buffer
	rec := &recObserver{}
	opts := []lendgraph.Option{lendgraph.WithMaxRetries(0), lendgraph.WithRetryBackoff(time.Millisecond, time.Millisecond),
		lendgraph.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		lendgraph.WithObserver(rec)}
	if bearer {
		opts = append(opts, lendgraph.WithBearerAuth())
	}
	var c *lendgraph.Client
	if api == nil {
		var err error
		c, err = lendgraph.NewClient(append(opts, lendgraph.WithAPIKey(hostileKey), lendgraph.WithBaseURL("http://"+closedAddr(t)))...)
		if err != nil {
			t.Fatal(err)
		}
	} else {
		c = hostileClient(t, api, opts...)
	}
	ctx := context.Background()
	var err error
	switch {
	case e.host == "storage", e.host == "api-link":
		_, err = c.Agents.DeliveryJob("dlv_1").Download(ctx, new(bytes.Buffer))
	case e.host == "search":
		_, err = c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
	case e.serve == nil:
		err = c.Do(ctx, http.MethodGet, "/v1/locations/retrieve?mapId="+echoSignature, nil, nil)
	default:
		_, err = c.Agents.Get(ctx, "agt_1")
	}
	if err == nil {
		t.Fatal("no error")
	}
	if e.host == "search" && e.name == "403" && !errors.Is(err, lendgraph.ErrForbidden) {
		t.Errorf("err = %v, want ErrForbidden", err)
	}
	if e.serve == nil && !strings.Contains(logs.String(), "request failed") {
		t.Errorf("the failure was not logged: %s", logs.String())
	}
	rec.check(t)
	text := printAll(err) + logs.String() + rec.text()
	var apiErr *lendgraph.APIError
	var de *lendgraph.DecodeError
	if errors.As(err, &apiErr) {
		text += apiErr.RequestID + string(apiErr.Body)
	}
	if errors.As(err, &de) {
		text += de.RequestID + de.ContentType
	}
	for _, secret := range []string{hostileKey, echoToken, echoSignature} {
		if strings.Contains(text, secret) {
			t.Fatalf("a secret reached the error, its fields or the log:\n%s", text)
		}
	}
}

// secretsInFakeFlow runs the fake's flows (calls, a retried drop, a 404, a
// wrong key, a delivery downloaded, resumed after a cut and read as rows,
// search host queries and a refused one, an enrichment downloaded after its
// link expired) and checks that the storage and search hosts never saw the
// key and that no print, log line, error or panic shows the key, a search
// token or a link's signature.
func secretsInFakeFlow(t *testing.T, bearer bool) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(50), lendgraphtest.WithLinkTTL(time.Minute))
	key := srv.DefaultCaller().Key
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rec := &recObserver{}
	opts := []lendgraph.Option{lendgraph.WithLogger(logger), lendgraph.WithMaxRetries(1), lendgraph.WithObserver(rec)}
	if bearer {
		opts = append(opts, lendgraph.WithBearerAuth())
	}
	c := srv.Client(opts...)
	ctx := context.Background()
	wait := lendgraph.WithPollInterval(5*time.Millisecond, 20*time.Millisecond)
	printed := map[string]any{}
	fail := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	srv.InjectFault("GET", "/v1/agents/*", lendgraphtest.Fault{Kind: lendgraphtest.DropBeforeResponse})
	_, err := c.Agents.Get(ctx, "agt_0000001") // dropped once, then retried
	fail("get after a drop", err)
	_, err = c.Agents.Get(ctx, "nope")
	if !errors.Is(err, lendgraph.ErrNotFound) {
		t.Fatalf("get nope: %v", err)
	}
	printed["404"] = err
	_, err = srv.Client(append(opts, lendgraph.WithAPIKey(key+"x"))...).Agents.List(ctx, nil)
	if !errors.Is(err, lendgraph.ErrUnauthorized) {
		t.Fatalf("wrong key: %v", err)
	}
	printed["401"] = err

	job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 20})
	fail("deliver", err)
	st, err := job.Wait(ctx, wait)
	fail("wait", err)
	_, err = job.Download(ctx, io.Discard)
	fail("download", err)
	srv.InjectFault("GET", "/objects/*", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
	_, err = job.Download(ctx, io.Discard) // resumed with Range
	fail("resumed download", err)
	for _, err := range job.Rows(ctx) {
		fail("rows", err)
	}

	tok, err := c.Search.TokenSource().Token(ctx)
	fail("token", err)
	_, err = c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
	fail("search", err)
	srv.InjectFault(http.MethodPost, "/indexes/*/search", lendgraphtest.Fault{Status: 403, Times: -1,
		Body: `{"message":"expired","code":"invalid_api_key","type":"auth","link":""}`})
	_, err = c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
	if !errors.Is(err, lendgraph.ErrForbidden) {
		t.Fatalf("refused search: %v", err)
	}
	printed["403 from the search host"] = err
	srv.ClearFaults()

	ej, err := c.Properties.EnrichBulk(ctx, []string{srv.Dataset().ID("properties", 1)}, nil)
	fail("enrich", err)
	est, err := ej.Wait(ctx, wait)
	fail("enrich wait", err)
	srv.Advance(2 * time.Minute) // the results link expires
	_, err = ej.Download(ctx, io.Discard)
	fail("enrich download", err)

	// The secrets: the key, every token and signature the hosts received.
	secrets := map[string]string{key: "API key"}
	hosts := map[string]int{}
	ranged := 0
	for _, r := range srv.Requests() {
		hosts[r.Listener]++
		switch r.Listener {
		case "api":
			continue
		case "storage":
			q, _ := url.ParseQuery(r.Query)
			if s := q.Get("X-Signature"); s != "" {
				secrets[s] = "link signature"
			}
			if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
				t.Errorf("storage host received a credential header: %s %s", r.Method, r.Path)
			}
			if r.Header.Get("Range") != "" {
				ranged++
			}
		case "search":
			if a := r.Header.Get("Authorization"); a != "" {
				secrets[strings.TrimPrefix(a, "Bearer ")] = "search token"
			}
		}
		if strings.Contains(fmt.Sprint(r.Header, r.Query, string(r.Body)), key) {
			t.Errorf("%s host received the key: %s %s", r.Listener, r.Method, r.Path)
		}
		if tp := r.Header.Get("Traceparent"); tp != "" && r.Listener != "search" {
			t.Errorf("%s host received trace context: %s %s", r.Listener, r.Method, r.Path)
		}
	}
	if hosts["storage"] == 0 || hosts["search"] == 0 || ranged == 0 {
		t.Fatalf("requests by host: %v, %d ranged", hosts, ranged)
	}
	if len(secrets) < 3 {
		t.Fatalf("secrets seen: %d", len(secrets))
	}

	for name, v := range map[string]any{
		"client": c, "client value": *c, "option": opts, "token": tok, "token value": *tok,
		"delivery job": job, "delivery status": st, "enrich job": ej, "enrich status": est,
		"results link": st.ResultsURL, "search service": c.Search, "token source": c.Search.TokenSource(),
	} {
		printed[name] = v
	}
	rec.check(t)
	texts := map[string]string{"debug log": logs.String(), "observer": rec.text()}
	for name, v := range printed {
		texts[name] = printAll(v)
	}
	// A panic's value is printed by the runtime: a client panicking with
	// itself (or a status record) in the message shows no secret either.
	func() {
		defer func() { texts["panic"] = fmt.Sprint(recover()) }()
		panic(fmt.Sprintf("unexpected state: %v %v %v", c, st, tok))
	}()
	for where, text := range texts {
		for secret, what := range secrets {
			if strings.Contains(text, secret) {
				t.Errorf("%s printed in %s: %q", what, where, text)
			}
		}
	}
	if !strings.Contains(texts["token"], "[redacted]") {
		t.Errorf("the token prints as %q", texts["token"])
	}
	for _, path := range []string{"/v1/agents", "/objects/", "/indexes/agents/search"} {
		if !strings.Contains(logs.String(), path) {
			t.Errorf("the debug log misses %s:\n%s", path, logs.String())
		}
	}
}

// remoteAPI returns a client whose API base URL names a remote host
// (api.lendgraph.test) while every connection goes to h on loopback, and
// the hosts the client dialed.
func remoteAPI(t *testing.T, h http.HandlerFunc, opts ...lendgraph.Option) (*lendgraph.Client, func() []string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	var dialed []string
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, addr)
		mu.Unlock()
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := lendgraph.NewClient(append([]lendgraph.Option{lendgraph.WithAPIKey(hostileKey), lendgraph.WithBaseURL("http://api.lendgraph.test"),
		lendgraph.WithHTTPClient(&http.Client{Transport: tr}), lendgraph.WithMaxRetries(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(dialed)
	}
}

// A results link or a search host on a link-local address (a cloud's
// metadata service) is refused when the API is remote, before anything
// is sent there; and WithLinkHosts restricts links to the hosts it names.
func TestLinks_LinkLocalAndAllowList(t *testing.T) {
	for _, tc := range []struct {
		name     string
		link     string
		opts     []lendgraph.Option
		refused  bool
		dialedTo string
	}{
		{"link-local", "http://169.254.169.254/latest/meta-data?sig=s3cr3t-signature", nil, true, ""},
		{"link-local v6", "http://[fe80::1]/f?sig=s3cr3t-signature", nil, true, ""},
		{"not in the allow-list", "http://evil.example/f?sig=s3cr3t-signature", []lendgraph.Option{lendgraph.WithLinkHosts(".lendgraph.test")}, true, ""},
		{"in the allow-list", "http://storage.lendgraph.test/f?sig=s3cr3t-signature", []lendgraph.Option{lendgraph.WithLinkHosts(".lendgraph.test")}, false, "storage.lendgraph.test:80"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, dialed := remoteAPI(t, func(w http.ResponseWriter, r *http.Request) {
				switch {
				case strings.HasPrefix(r.URL.Path, "/v1/search-token"):
					fmt.Fprintf(w, `{"token":"tok_0123456789abcdef","host":%q,"indexes":["agents"],"expiresAt":%q}`,
						strings.Split(tc.link, "/f?")[0], time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
				case strings.HasPrefix(r.URL.Path, "/v1/"):
					fmt.Fprintf(w, `{"jobId":"dlv_1","status":"completed","format":"csv","bytes":5,"resultsUrl":%q}`, tc.link)
				default:
					fmt.Fprint(w, "id\na\n")
				}
			}, tc.opts...)
			_, err := c.Agents.DeliveryJob("dlv_1").Download(context.Background(), io.Discard)
			_, serr := c.Search.Host().Search(context.Background(), lendgraph.IndexAgents, &lendgraph.HostSearchRequest{})
			if tc.refused {
				if !errors.Is(err, lendgraph.ErrUnsafeLink) || !errors.Is(serr, lendgraph.ErrUnsafeLink) {
					t.Fatalf("download: %v; search: %v; want both refused as unsafe links", err, serr)
				}
				if strings.Contains(err.Error(), "s3cr3t-signature") {
					t.Fatalf("the error quotes the link's signature: %v", err)
				}
				for _, d := range dialed() {
					if d != "api.lendgraph.test:80" {
						t.Fatalf("dialed %s", d)
					}
				}
				return
			}
			if err != nil || !slices.Contains(dialed(), tc.dialedTo) {
				t.Fatalf("allowed link: %v, dialed %v", err, dialed())
			}
		})
	}
	if _, err := lendgraph.NewClient(lendgraph.WithLinkHosts("http://x/")); err == nil {
		t.Fatal("WithLinkHosts took a URL for a host name")
	}
}
