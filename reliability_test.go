package lendgraph_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// --- secrets: redirects ---

// redirectTargets are the origins a redirect may point to that are not
// the origin the credential belongs to. from is "host:port" of the origin.
func redirectTargets(fromPort, otherPort string) map[string]string {
	return map[string]string{
		"other host":   "http://other.test:" + otherPort,
		"subdomain":    "http://evil.api.lendgraph.test:" + fromPort,
		"parent-named": "http://api.lendgraph.test.evil.test:" + otherPort,
		"other port":   "http://api.lendgraph.test:" + otherPort,
	}
}

// A redirect from the API host, whatever the auth header and method,
// carries no credential and no body to another origin.
func TestAPIRedirectCarriesNoCredentialOrBody(t *testing.T) {
	const key = "lg_secret_redirect_key"
	other := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if len(b) > 0 {
			t.Errorf("body sent to %s: %q", r.Host, b)
		}
		fmt.Fprint(w, `{"id":"x","data":[]}`)
	})
	var mu sync.Mutex
	var target string
	var code int
	var api *recorder
	api = newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "api.lendgraph.test:"+api.port {
			// Another name for the same listener: answer as another host.
			fmt.Fprint(w, `{"id":"x","data":[]}`)
			return
		}
		mu.Lock()
		to, c := target, code
		mu.Unlock()
		http.Redirect(w, r, to+r.URL.Path, c)
	})
	for name, to := range redirectTargets(api.port, other.port) {
		for _, bearer := range []bool{false, true} {
			// 302 and 303 turn a POST into a GET without its body; 307
			// and 308 would re-send it and are refused.
			for _, c := range []int{http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
				t.Run(fmt.Sprintf("%s/bearer=%v/%d", name, bearer, c), func(t *testing.T) {
					mu.Lock()
					target, code = to, c
					mu.Unlock()
					tr := &http.Transport{DialContext: loopbackDialer()}
					defer tr.CloseIdleConnections()
					opts := []lendgraph.Option{lendgraph.WithAPIKey(key), lendgraph.WithBaseURL("http://api.lendgraph.test:" + api.port),
						lendgraph.WithHTTPClient(&http.Client{Transport: tr}), lendgraph.WithMaxRetries(0)}
					if bearer {
						opts = append(opts, lendgraph.WithBearerAuth())
					}
					c2, err := lendgraph.NewClient(opts...)
					if err != nil {
						t.Fatal(err)
					}
					before, beforeAPI := len(other.headers()), len(api.headers())
					_, getErr := c2.Agents.Get(context.Background(), "x")
					_, postErr := c2.Agents.List(context.Background(), &lendgraph.ListRequest{FlatFilters: map[string]any{"state": "CA"}})
					if getErr != nil {
						t.Fatalf("GET after a %d: %v", c, getErr)
					}
					if (c == 307 || c == 308) != (postErr != nil) {
						t.Fatalf("POST after a %d: %v", c, postErr)
					}
					for _, h := range append(other.headers()[before:], api.headers()[beforeAPI:]...) {
						if h.Get("X-Seen-Host") == "api.lendgraph.test:"+api.port {
							if h.Get("X-Api-Key")+h.Get("Authorization") == "" {
								t.Fatal("the API host got no credential")
							}
							continue
						}
						if h.Get("X-Api-Key") != "" || h.Get("Authorization") != "" {
							t.Fatalf("credential sent to %s: %v", h.Get("X-Seen-Host"), h)
						}
					}
				})
			}
		}
	}
}

// The search host's token is not carried by a redirect to another origin,
// the API key never reaches it at all, and an https search host that
// redirects to http loses the token too.
func TestSearchTokenNotCarriedByRedirect(t *testing.T) {
	srv := smallServer(t)
	key := srv.DefaultCaller().Key
	other := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"hits":[],"query":"jo","processingTimeMs":1,"limit":20,"offset":0,"estimatedTotalHits":0}`)
	})
	var mu sync.Mutex
	var target string
	host := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		to := target
		mu.Unlock()
		http.Redirect(w, r, to+r.URL.Path, http.StatusFound)
	})
	srv.SetSearchTokenHost("http://search.lendgraph.test:" + host.port)
	targets := map[string]string{
		"other host": "http://other.test:" + other.port,
		"subdomain":  "http://evil.search.lendgraph.test:" + other.port,
		"other port": "http://search.lendgraph.test:" + other.port,
	}
	for name, to := range targets {
		t.Run(name, func(t *testing.T) {
			mu.Lock()
			target = to
			mu.Unlock()
			tr := &http.Transport{DialContext: loopbackDialer()}
			defer tr.CloseIdleConnections()
			// The API itself is reached by its loopback address.
			c := srv.Client(lendgraph.WithHTTPClient(&http.Client{Transport: tr}))
			before := len(other.headers())
			_, _ = c.Search.Host().Search(context.Background(), lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
			for _, h := range append(host.headers(), other.headers()[before:]...) {
				if strings.Contains(fmt.Sprint(h), key) {
					t.Fatalf("API key sent to the search host side: %v", h)
				}
			}
			for _, h := range other.headers()[before:] {
				if h.Get("Authorization") != "" {
					t.Fatalf("search token sent to %s after a redirect", h.Get("X-Seen-Host"))
				}
			}
		})
	}
	t.Run("https to http", func(t *testing.T) {
		plain := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"hits":[]}`)
		})
		secure := newRecorder(t, true, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.1:"+plain.port+r.URL.Path, http.StatusFound)
		})
		srv.SetSearchTokenHost(secure.srv.URL)
		defer srv.SetSearchTokenHost("")
		tr := secure.srv.Client().Transport.(*http.Transport).Clone()
		defer tr.CloseIdleConnections()
		c := srv.Client(lendgraph.WithHTTPClient(&http.Client{Transport: tr}))
		_, _ = c.Search.Host().Search(context.Background(), lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
		if len(secure.headers()) == 0 || secure.headers()[0].Get("Authorization") == "" {
			t.Fatal("the https search host got no token")
		}
		for _, h := range plain.headers() {
			if h.Get("Authorization") != "" {
				t.Fatalf("search token sent over plain http after a redirect")
			}
		}
	})
}

// --- secrets: printing ---

// secretsOf collects the credentials a test must never see printed.
type secretsOf struct {
	key, token, signature string
}

func (s secretsOf) scan(t *testing.T, where, text string) {
	t.Helper()
	for name, v := range map[string]string{"API key": s.key, "search token": s.token, "link signature": s.signature} {
		if v != "" && strings.Contains(text, v) {
			t.Errorf("%s printed in %s: %q", name, where, text)
		}
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

func TestNoSecretInPrintsLogsOrErrors(t *testing.T) {
	srv := smallServer(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := srv.Client(lendgraph.WithLogger(logger), lendgraph.WithMaxRetries(1))
	ctx := context.Background()
	sec := secretsOf{key: srv.DefaultCaller().Key}

	job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	st, err := job.Wait(ctx, lendgraph.WithPollInterval(5*time.Millisecond, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(st.ResultsURL.Reveal())
	sec.signature = u.Query().Get("X-Signature")
	if sec.signature == "" {
		t.Fatal("no signature in the results link")
	}
	tok, err := c.Search.TokenSource().Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sec.token = tok.Token
	ej, err := c.Properties.EnrichBulk(ctx, []string{srv.Dataset().ID("properties", 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	est, err := ej.Wait(ctx, lendgraph.WithPollInterval(5*time.Millisecond, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}

	// Errors from every layer, the storage host's included: a 403 body
	// echoing the signature (as S3's SignatureDoesNotMatch does), a
	// refused connection to a signed link, a search host refusing the token.
	var errs []error
	srv.InjectFault("GET", "/objects/*", lendgraphtest.Fault{Status: 403, Times: -1,
		Body: "<Error><Code>SignatureDoesNotMatch</Code><SignatureProvided>" + sec.signature + "</SignatureProvided></Error>"})
	_, err = job.Download(ctx, io.Discard)
	errs = append(errs, err)
	srv.ClearFaults()
	srv.InjectFault("", "/objects/*", lendgraphtest.Fault{Kind: lendgraphtest.DropBeforeResponse, Times: -1})
	_, err = job.Download(ctx, io.Discard)
	errs = append(errs, err)
	srv.ClearFaults()
	srv.InjectFault("POST", "/indexes/*/search", lendgraphtest.Fault{Status: 401, Times: -1, Body: `{"message":"bad token ` + sec.token + `"}`})
	_, err = c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
	errs = append(errs, err)
	srv.ClearFaults()
	srv.InjectFault("", "/v1/agents/bulk-delivery/*", lendgraphtest.Fault{Kind: lendgraphtest.DropBeforeResponse, Times: -1})
	_, err = job.Status(ctx)
	errs = append(errs, err)
	srv.ClearFaults()
	srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Status: 401, Body: `{"error":"invalid key ` + sec.key + `"}`})
	_, err = c.Agents.List(ctx, nil)
	errs = append(errs, err)
	for i, e := range errs {
		if e == nil {
			t.Fatalf("error %d: nil", i)
		}
		sec.scan(t, fmt.Sprintf("error %d", i), printAll(e)+e.Error())
	}

	opts := []lendgraph.Option{lendgraph.WithAPIKey(sec.key), lendgraph.WithBearerAuth()}
	for name, v := range map[string]any{
		"client": c, "client value": *c, "option": opts, "token": tok, "token value": *tok,
		"delivery job": job, "delivery status": st, "enrich job": ej, "enrich status": est,
		"results link": st.ResultsURL, "search service": c.Search, "token source": c.Search.TokenSource(),
	} {
		sec.scan(t, name, printAll(v))
	}
	sec.scan(t, "debug log", logs.String())
	if !strings.Contains(logs.String(), "/objects/") || !strings.Contains(logs.String(), "/indexes/") {
		t.Errorf("the debug log misses the storage or search host requests:\n%s", logs.String())
	}

	// A panic's value is printed by the runtime: a client panicking with
	// itself (or a status record) in the message shows no secret either.
	func() {
		defer func() { sec.scan(t, "panic", fmt.Sprint(recover())) }()
		panic(fmt.Sprintf("unexpected state: %v %v %v", c, st, tok))
	}()
}

// An empty key, a blank one, or one with a line break is refused before
// any request; the error does not print it.
func TestBadKeysRefusedBeforeAnyRequest(t *testing.T) {
	srv := smallServer(t)
	t.Setenv(lendgraph.EnvAPIKey, "")
	for _, key := range []string{"", "   ", "\t"} {
		c, err := lendgraph.NewClient(lendgraph.WithAPIKey(key), lendgraph.WithBaseURL(srv.URL))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Agents.List(context.Background(), nil); !errors.Is(err, lendgraph.ErrMissingAPIKey) {
			t.Errorf("key %q: err = %v, want ErrMissingAPIKey", key, err)
		}
		if _, err := c.Search.Host().Search(context.Background(), lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"}); !errors.Is(err, lendgraph.ErrMissingAPIKey) {
			t.Errorf("key %q: search host: err = %v, want ErrMissingAPIKey", key, err)
		}
	}
	for _, key := range []string{"lg_live_abc\n", "lg_live_abc\r\n", "lg\rlive", "\nlg_live_abc"} {
		t.Setenv(lendgraph.EnvAPIKey, key)
		for _, opts := range [][]lendgraph.Option{{lendgraph.WithAPIKey(key)}, nil} {
			c, err := lendgraph.NewClient(append(opts, lendgraph.WithBaseURL(srv.URL))...)
			if err == nil || c != nil {
				t.Errorf("key %q accepted", key)
			} else if strings.Contains(err.Error(), "lg_live") || strings.Contains(err.Error(), "live") {
				t.Errorf("error prints the key: %v", err)
			}
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// The signed-link downloader and the search host client send through the
// credential-free pipeline: whatever the transport, the storage and search
// hosts never see the key, in a header or anywhere else in the request.
func TestNonAPIHostsNeverSeeTheKey(t *testing.T) {
	srv := smallServer(t)
	key := srv.DefaultCaller().Key
	for _, bearer := range []bool{false, true} {
		opts := []lendgraph.Option{}
		if bearer {
			opts = append(opts, lendgraph.WithBearerAuth())
		}
		c := srv.Client(opts...)
		ctx := context.Background()
		job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatNDJSON, Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := job.Download(ctx, io.Discard); err != nil {
			t.Fatal(err)
		}
		for _, err := range job.Rows(ctx) {
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"}); err != nil {
			t.Fatal(err)
		}
	}
	hosts := map[string]int{}
	for _, r := range srv.Requests() {
		hosts[r.Listener]++
		if r.Listener == "api" {
			continue
		}
		if strings.Contains(fmt.Sprint(r.Header, r.Query, string(r.Body)), key) {
			t.Errorf("%s host received the key: %s %s", r.Listener, r.Method, r.Path)
		}
		if r.Listener == "storage" && (r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "") {
			t.Errorf("storage host received a credential header")
		}
	}
	if hosts["storage"] == 0 || hosts["search"] == 0 {
		t.Fatalf("requests by host: %v", hosts)
	}
}

// --- concurrency ---

// One Client used by many goroutines at once, mixing every kind of call,
// under -race: nothing shared is written unguarded, every call succeeds.
func TestConcurrentUseOfOneClient(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(400))
	c := srv.Client()
	ctx := context.Background()
	job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	match := matchingProperty(t, srv)
	// Intermittent faults keep the retry paths (and the shared budget) busy.
	srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Status: 503, Times: 5})
	srv.InjectFault("GET", "/v1/agents/*", lendgraphtest.Fault{Kind: lendgraphtest.DropBeforeResponse, Times: 5})
	ops := []func() error{
		func() error { _, err := c.Agents.List(ctx, nil); return err },
		func() error { _, err := c.Agents.Get(ctx, "agt_0000002"); return err },
		func() error {
			n := 0
			for _, err := range c.Agents.All(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 20}}) {
				if err != nil {
					return err
				}
				if n++; n == 30 {
					break // an iterator broken early
				}
			}
			return nil
		},
		func() error { _, err := c.Properties.Enrich(ctx, match, nil); return err },
		func() error { _, err := job.Status(ctx); return err },
		func() error {
			_, err := job.Wait(ctx, lendgraph.WithPollInterval(2*time.Millisecond, 10*time.Millisecond))
			return err
		},
		func() error { _, err := c.Search.Instant(ctx, &lendgraph.InstantSearchRequest{Query: "s"}); return err },
		func() error {
			_, err := c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
			return err
		},
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 12 {
				if err := ops[(g+i)%len(ops)](); err != nil {
					t.Errorf("goroutine %d op %d: %v", g, (g+i)%len(ops), err)
				}
			}
		})
	}
	wg.Wait()
	if n := len(srv.Debits(lendgraphtest.DefaultOrg)); n > 2 {
		// One fresh enrichment (then cache hits) and one delivery.
		t.Errorf("%d debits, want at most 2", n)
	}
}

var _ = httptest.NewServer

// --- decoders under bad input (the cases delivery_decode_test.go does
// not already hold; see RELIABILITY.md for the full list) ---

func TestDeliveryDecodersEdgeCases(t *testing.T) {
	// Concatenated gzip members (a file written in parts) are all read.
	two := append(gzipBytes(`{"id":"a"}`+"\n"+`{"id":"b"}`+"\n"), gzipBytes(`{"id":"c"}`+"\n")...)
	rows, err := decodeAll[lendgraph.Agent](t, two, lendgraph.FormatNDJSON)
	if err != nil || len(rows) != 3 || rows[2].ID != "c" {
		t.Errorf("concatenated gzip members: %d rows, %v", len(rows), err)
	}
	// A UTF-8 BOM before the csv header is dropped, not part of "id".
	rows, err = decodeAll[lendgraph.Agent](t, []byte("\xef\xbb\xbfid,transactionCount\na,1\n"), lendgraph.FormatCSV)
	if err != nil || len(rows) != 1 || rows[0].ID != "a" || rows[0].TransactionCount != 1 {
		t.Errorf("csv with BOM: %+v, %v", rows, err)
	}
	// Trailing garbage after a JSON array file is an error after the rows.
	rows, err = decodeAll[lendgraph.Agent](t, []byte(`[{"id":"a"}] {"id":"b"}`), lendgraph.FormatJSON)
	if err == nil || len(rows) != 1 || !strings.Contains(err.Error(), "after the array") {
		t.Errorf("json trailing garbage: %d rows, %v", len(rows), err)
	}
}

func resultIDs(b []byte) ([]string, error) {
	var ids []string
	for e, err := range lendgraph.DecodeEnrichmentResults(bytes.NewReader(b)) {
		if err != nil {
			return ids, err
		}
		ids = append(ids, e.PropertyID)
	}
	return ids, nil
}

func TestEnrichmentResultsDecoderBounds(t *testing.T) {
	// Concatenated gzip members and a BOM.
	two := append(gzipBytes("\xef\xbb\xbf"+`{"propertyId":"a"}`+"\n"), gzipBytes(`{"propertyId":"b"}`+"\n")...)
	if ids, err := resultIDs(two); err != nil || strings.Join(ids, ",") != "a,b" {
		t.Errorf("gzip members: %v, %v", ids, err)
	}
	// A 10 MB line decodes; one past the 16 MiB cap is an error naming the
	// line, after the lines before it.
	long := `{"propertyId":"b","source":"` + strings.Repeat("x", 10<<20) + `"}`
	if ids, err := resultIDs([]byte(`{"propertyId":"a"}` + "\n" + long + "\n")); err != nil || len(ids) != 2 {
		t.Errorf("10 MB line: %v, %v", len(ids), err)
	}
	tooLong := `{"propertyId":"b","source":"` + strings.Repeat("x", 17<<20) + `"}`
	if ids, err := resultIDs([]byte(`{"propertyId":"a"}` + "\n" + tooLong + "\n")); err == nil || len(ids) != 1 || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("17 MiB line: %v, %v", ids, err)
	}
	// An array element past the cap fails too, naming the element.
	if ids, err := resultIDs([]byte(`[{"propertyId":"a"},{"propertyId":"b","source":"` + strings.Repeat("x", 40<<20) + `"}]`)); err == nil || len(ids) != 1 || !strings.Contains(err.Error(), "row 2") {
		t.Errorf("40 MiB element: %v, %v", ids, err)
	}
	// Trailing garbage after the array is an error after the entries.
	if ids, err := resultIDs([]byte(`[{"propertyId":"a"}] x`)); err == nil || len(ids) != 1 {
		t.Errorf("trailing garbage: %v, %v", ids, err)
	}
	// A bad gzip checksum is an error after the entries read.
	z := gzipBytes(`{"propertyId":"a"}` + "\n" + `{"propertyId":"b"}` + "\n")
	z[len(z)-6] ^= 0xff
	if ids, err := resultIDs(z); err == nil || len(ids) != 2 {
		t.Errorf("bad checksum: %v, %v", ids, err)
	}
	// The decompression cap: a small file that inflates past it fails.
	restore := lendgraph.SetMaxResultsSize(1 << 20)
	defer restore()
	bomb := gzipBytes(strings.Repeat(`{"propertyId":"a"}`+"\n", 200_000)) // 3.8 MB inflated, ~20 KB deflated
	if ids, err := resultIDs(bomb); err == nil || !strings.Contains(err.Error(), "larger than the limit") || len(ids) > 60_000 {
		t.Errorf("decompression cap: %d entries, %v", len(ids), err)
	}
}
