package lendgraph_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func TestSearchHost_Search(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client(lendgraph.WithBearerAuth()) // the key would travel in Authorization
	h := c.Search.Host()
	ctx := context.Background()
	res, err := h.Search(ctx, lendgraph.IndexOriginators, &lendgraph.HostSearchRequest{Q: "smi", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	hits, err := res.OriginatorHits()
	if err != nil || len(hits) != 10 || res.Limit != 10 || res.Query != "smi" || res.EstimatedTotalHits < 10 {
		t.Fatalf("result %+v, %v", res, err)
	}
	for _, o := range hits {
		if o.ID == "" || len(o.States) == 0 || len(o.Cities) == 0 || !(hasPrefixFold(o.FirstName, "smi") || hasPrefixFold(o.LastName, "smi")) {
			t.Fatalf("hit %+v", o)
		}
	}
	// Offset pages through the same order.
	page2, err := h.Search(ctx, lendgraph.IndexOriginators, &lendgraph.HostSearchRequest{Q: "smi", Limit: 5, Offset: 5})
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := page2.OriginatorHits()
	if len(p2) != 5 || p2[0].ID != hits[5].ID || page2.EstimatedTotalHits != res.EstimatedTotalHits {
		t.Fatalf("page 2 %+v", p2)
	}
	// Filter, attributes to search on, retrieve and highlight.
	res, err = h.Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo", Limit: 50,
		Filter: `states = "TX" AND cities = "Austin"`, AttributesToSearchOn: []string{"lastName"},
		AttributesToRetrieve: []string{"id", "lastName", "cities"}, AttributesToHighlight: []string{"lastName"}})
	if err != nil {
		t.Fatal(err)
	}
	type agentHit struct {
		ID        string         `json:"id"`
		FirstName string         `json:"firstName"`
		LastName  string         `json:"lastName"`
		Cities    []string       `json:"cities"`
		Formatted map[string]any `json:"_formatted"`
	}
	agents, err := lendgraph.DecodeHits[agentHit](res)
	if err != nil || len(agents) == 0 {
		t.Fatalf("%v %+v", err, res)
	}
	for _, a := range agents {
		if a.FirstName != "" || !hasPrefixFold(a.LastName, "jo") || !slices.Equal(a.Cities, []string{"Austin"}) ||
			!strings.HasPrefix(fmt.Sprint(a.Formatted["lastName"]), "<em>Jo</em>") {
			t.Fatalf("hit %+v", a)
		}
	}
	// One typo in a long word still matches.
	res, err = h.Search(ctx, lendgraph.IndexOriginators, &lendgraph.HostSearchRequest{Q: "smitj", Limit: 3})
	if hits, _ := res.OriginatorHits(); err != nil || len(hits) == 0 || !hasPrefixFold(hits[0].LastName, "smith") && !hasPrefixFold(hits[0].FirstName, "smith") {
		t.Fatalf("typo: %v %+v", err, hits)
	}
	// The host refuses what it does not know (here: an attribute it does not search).
	_, err = h.Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo", AttributesToSearchOn: []string{"email"}})
	var he *lendgraph.SearchHostError
	if !errors.As(err, &he) || he.StatusCode != 400 || he.Code != "invalid_search_attributes_to_search_on" {
		t.Fatalf("err = %v", err)
	}
	// The API key never reached the search host; the token did.
	key := srv.DefaultCaller().Key
	n := 0
	for _, r := range srv.Requests() {
		if r.Listener != "search" {
			continue
		}
		n++
		for name, vs := range r.Header {
			for _, v := range vs {
				if strings.Contains(v, key) {
					t.Fatalf("the API key reached the search host in %s", name)
				}
			}
		}
		if bytes.Contains(r.Body, []byte(key)) || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer lgs_") {
			t.Fatalf("search request %+v", r.Header)
		}
	}
	if n != 5 || srv.SearchTokenMints() != 1 {
		t.Fatalf("%d search requests, %d mints", n, srv.SearchTokenMints())
	}
}

func TestSearchHost_ReMintsOnceOnRefusal(t *testing.T) {
	srv := searchServer(t)
	c, clk, _ := clockedSearch(t, srv)
	h := c.Search.Host()
	ctx := context.Background()
	q := &lendgraph.HostSearchRequest{Q: "smi"}
	if _, err := h.Search(ctx, lendgraph.IndexOriginators, q); err != nil {
		t.Fatal(err)
	}
	// The host's clock passes expiry while ours does not: 403, re-mint, retry.
	srv.Advance(time.Hour)
	srv.ResetRequests()
	if _, err := h.Search(ctx, lendgraph.IndexOriginators, q); err != nil {
		t.Fatal(err)
	}
	if n := srv.CountRequests(http.MethodPost, "/indexes/*/search"); n != 2 || srv.SearchTokenMints() != 2 {
		t.Fatalf("%d searches, %d mints; want 2 and 2", n, srv.SearchTokenMints())
	}
	// Revoked: 401, re-mint, retry (within a second of two mints as well:
	// TestSearchHost_RevokedTokenReMintsInsideStormWindow).
	clk.Advance(time.Second)
	srv.RevokeSearchTokens()
	if _, err := h.Search(ctx, lendgraph.IndexOriginators, q); err != nil || srv.SearchTokenMints() != 3 {
		t.Fatalf("after revoking: %v, %d mints", err, srv.SearchTokenMints())
	}
	// A host that keeps refusing: one retry, then its error.
	clk.Advance(time.Second)
	srv.ResetRequests()
	srv.InjectFault(http.MethodPost, "/indexes/*/search", lendgraphtest.Fault{Status: 401, Times: -1,
		Header: map[string]string{"Content-Type": "application/json"},
		Body:   `{"message":"The provided API key is invalid.","code":"invalid_api_key","type":"auth","link":"https://docs.meilisearch.com/errors#invalid_api_key"}`})
	_, err := h.Search(ctx, lendgraph.IndexOriginators, q)
	var he *lendgraph.SearchHostError
	var ae *lendgraph.APIError
	if !errors.Is(err, lendgraph.ErrUnauthorized) || !errors.As(err, &he) || he.Type != "auth" || he.Code != "invalid_api_key" ||
		!errors.As(err, &ae) || ae.StatusCode != 401 || ae.Message != "The provided API key is invalid." {
		t.Fatalf("err = %v", err)
	}
	if n := srv.CountRequests(http.MethodPost, "/indexes/*/search"); n != 2 || srv.SearchTokenMints() != 4 {
		t.Fatalf("%d searches, %d mints; want 2 and 4", n, srv.SearchTokenMints())
	}
}

func TestSearchHost_RotationWhileInFlight(t *testing.T) {
	srv := searchServer(t)
	srv.SetSearchTokenTTL(time.Minute)
	c := srv.Client()
	lendgraph.SetSearchClock(c, srv.Now)
	h := c.Search.Host()
	ctx := context.Background()
	var wg sync.WaitGroup
	var failed atomic.Int32
	for g := range 16 {
		wg.Go(func() {
			for i := range 20 {
				if g == 0 && i%5 == 0 {
					srv.Advance(30 * time.Second) // tokens expire and rotate under the others
				}
				if _, err := h.Search(ctx, lendgraph.IndexCompanies, &lendgraph.HostSearchRequest{Q: "sum", Limit: 3}); err != nil {
					t.Error(err)
					failed.Add(1)
					return
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() == 0 && srv.SearchTokenMints() > 6 {
		t.Fatalf("%d mints for 4 expiries", srv.SearchTokenMints())
	}
}

func TestSearchHost_FollowsTokenHost(t *testing.T) {
	srv := searchServer(t)
	target, _ := url.Parse(srv.SearchHostURL())
	var proxied atomic.Int32
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	srv.SetSearchTokenHost(proxy.URL)
	c := srv.Client()
	h := c.Search.Host()
	ctx := context.Background()
	if _, err := h.Search(ctx, lendgraph.IndexOffices, &lendgraph.HostSearchRequest{Q: "sum"}); err != nil {
		t.Fatal(err)
	}
	if proxied.Load() != 1 {
		t.Fatalf("proxy saw %d requests, want 1", proxied.Load())
	}
	// The next token names the real host: the SDK follows it.
	srv.SetSearchTokenHost("")
	srv.RevokeSearchTokens()
	for range 2 {
		if _, err := h.Search(ctx, lendgraph.IndexOffices, &lendgraph.HostSearchRequest{Q: "sum"}); err != nil {
			t.Fatal(err)
		}
	}
	if proxied.Load() != 2 { // the refused attempt only
		t.Fatalf("proxy saw %d requests, want 2", proxied.Load())
	}
}

func TestSearchHost_FakeIsStrict(t *testing.T) {
	srv := searchServer(t)
	tok := srv.NewSearchToken(time.Minute)
	companiesOnly := srv.NewSearchToken(time.Minute, "companies")
	const js = "application/json"
	for _, tc := range []struct {
		name, index, auth, ct, body string
		status                      int
		code                        string
	}{
		{"null members", "agents", tok, js, `{"q":"jo","limit":2,"hybrid":null,"vector":null}`, 200, ""},
		{"unknown field", "agents", tok, js, `{"q":"jo","foo":1}`, 400, "bad_request"},
		{"hybrid without embedder", "agents", tok, js, `{"q":"jo","hybrid":{"embedder":"default"}}`, 400, "invalid_search_hybrid_query"},
		{"limit type", "agents", tok, js, `{"q":"jo","limit":"2"}`, 400, "invalid_search_limit"},
		{"filter attribute", "agents", tok, js, `{"q":"jo","filter":"zip = 1"}`, 400, "invalid_search_filter"},
		{"content type", "agents", tok, "text/plain", `{"q":"jo"}`, 415, "invalid_content_type"},
		{"no payload", "agents", tok, js, ``, 400, "missing_payload"},
		{"no token", "agents", "", js, `{"q":"jo"}`, 401, "missing_authorization_header"},
		{"unknown token", "agents", "lgs_nope", js, `{"q":"jo"}`, 401, "invalid_api_key"},
		{"the API key", "agents", srv.DefaultCaller().Key, js, `{"q":"jo"}`, 401, "invalid_api_key"},
		{"out of scope", "agents", companiesOnly, js, `{"q":"jo"}`, 403, "invalid_api_key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := hostPost(t, srv, tc.index, tc.auth, tc.ct, tc.body)
			if status != tc.status || body["code"] != tc.code {
				t.Fatalf("%d %v, want %d %s", status, body, tc.status, tc.code)
			}
			if tc.code != "" && (body["message"] == "" || body["type"] == "" || body["link"] == "") {
				t.Fatalf("error body not in Meilisearch's format: %v", body)
			}
		})
	}
	srv.Advance(time.Minute)
	if status, body := hostPost(t, srv, "agents", tok, js, `{"q":"jo"}`); status != 403 {
		t.Fatalf("expired token: %d %v", status, body)
	}
	// What the SDK sends is accepted: the members it set, nothing else.
	srv.ResetRequests()
	if _, err := srv.Client().Search.Host().Search(context.Background(), lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo", Filter: `states = TX`}); err != nil {
		t.Fatal(err)
	}
	for _, r := range srv.Requests() {
		if r.Listener == "search" && string(r.Body) != `{"q":"jo","filter":"states = TX"}` {
			t.Fatalf("sent %s", r.Body)
		}
	}
}

func TestSearchHost_RetriesTransientFailures(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client()
	ctx := context.Background()
	h := c.Search.Host()
	if _, err := h.Search(ctx, lendgraph.IndexCompanies, &lendgraph.HostSearchRequest{Q: "sum"}); err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	// A 503 and a dropped connection: each retried by the SDK with the whole body.
	srv.InjectFault(http.MethodPost, "/indexes/*/search", lendgraphtest.Fault{Status: 503, Header: map[string]string{"Retry-After": "0"},
		Body: `{"message":"busy","code":"internal","type":"internal","link":""}`})
	srv.InjectFault(http.MethodPost, "/indexes/*/search", lendgraphtest.Fault{Kind: lendgraphtest.DropBeforeResponse})
	res, err := h.Search(ctx, lendgraph.IndexCompanies, &lendgraph.HostSearchRequest{Q: "sum", Limit: 4})
	if err != nil || len(res.Hits) != 4 {
		t.Fatalf("%v %+v", err, res)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for _, r := range reqs {
		if !bytes.Equal(r.Body, reqs[0].Body) || !bytes.Contains(r.Body, []byte(`"q":"sum"`)) {
			t.Fatalf("attempt sent %q, first sent %q", r.Body, reqs[0].Body)
		}
	}
	// A host that stays down: the error says so.
	srv.InjectFault(http.MethodPost, "/indexes/*/search", lendgraphtest.Fault{Status: 503, Times: -1, Header: map[string]string{"Retry-After": "0"}})
	_, err = srv.Client(lendgraph.WithMaxRetries(1)).Search.Host().Search(ctx, lendgraph.IndexCompanies, nil)
	if !errors.Is(err, lendgraph.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

// A 200 whose body is cut half-way is retried like any read (issue 17,
// item 11): the server sees a second attempt and the caller gets the hits.
func TestSearchHost_RetriesCutBody(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client()
	ctx := context.Background()
	h := c.Search.Host()
	if _, err := h.Search(ctx, lendgraph.IndexCompanies, &lendgraph.HostSearchRequest{Q: "sum"}); err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	srv.InjectFault(http.MethodPost, "/indexes/*/search", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
	res, err := h.Search(ctx, lendgraph.IndexCompanies, &lendgraph.HostSearchRequest{Q: "sum", Limit: 4})
	if err != nil || len(res.Hits) != 4 {
		t.Fatalf("%v %+v", err, res)
	}
	if n := srv.CountRequests(http.MethodPost, "/indexes/*/search"); n != 2 {
		t.Fatalf("the search host saw %d attempts, want 2 (the cut one and its retry)", n)
	}
	// Cut every time: the retries run out and the error says the body was cut.
	srv.InjectFault(http.MethodPost, "/indexes/*/search", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody, Times: -1})
	srv.ResetRequests()
	_, err = srv.Client(lendgraph.WithMaxRetries(2)).Search.Host().Search(ctx, lendgraph.IndexCompanies, &lendgraph.HostSearchRequest{Q: "sum"})
	var de *lendgraph.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want a *DecodeError matching io.ErrUnexpectedEOF", err)
	}
	if n := srv.CountRequests(http.MethodPost, "/indexes/*/search"); n != 3 {
		t.Fatalf("the search host saw %d attempts, want 3", n)
	}
}

// TestSearchHost_NotScopedIsNoExpiry: a 403 saying that the token is not
// scoped to the index (the host's scope narrower than the token's indexes
// say) refuses the request, not the token: the host's error comes back
// with no new token minted and nothing sent again.
func TestSearchHost_NotScopedIsNoExpiry(t *testing.T) {
	srv := searchServer(t)
	h := srv.Client().Search.Host()
	ctx := context.Background()
	if _, err := h.Search(ctx, lendgraph.IndexOriginators, &lendgraph.HostSearchRequest{Q: "smi"}); err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	srv.InjectFault(http.MethodPost, "/indexes/*/search", lendgraphtest.Fault{Status: 403, Times: -1,
		Header: map[string]string{"Content-Type": "application/json"},
		Body:   "{\"message\":\"The provided search token is not scoped to index `originators`.\",\"code\":\"invalid_api_key\",\"type\":\"auth\",\"link\":\"https://docs.meilisearch.com/errors#invalid_api_key\"}"})
	_, err := h.Search(ctx, lendgraph.IndexOriginators, &lendgraph.HostSearchRequest{Q: "smi"})
	var he *lendgraph.SearchHostError
	if !errors.As(err, &he) || he.StatusCode != 403 || he.Code != "invalid_api_key" || !strings.Contains(he.Message, "not scoped to index") {
		t.Fatalf("err = %v", err)
	}
	if n := srv.CountRequests(http.MethodPost, "/indexes/*/search"); n != 1 || srv.SearchTokenMints() != 1 {
		t.Fatalf("%d searches, %d mints; want 1 and 1", n, srv.SearchTokenMints())
	}
}

// TestSearchHost_RevokedTokenReMintsInsideStormWindow (issue 26 item 5):
// the mint-storm guard holds back only tokens the host never accepted. A
// token revoked after the host had answered with it gets its one re-mint
// however recent the last mints: revoke, search, revoke, search within one
// second both succeed, one re-mint each. A host refusing every token
// (never accepting one) gets at most two mints a second. Counted at the
// server, on a manual clock.
func TestSearchHost_RevokedTokenReMintsInsideStormWindow(t *testing.T) {
	srv := searchServer(t)
	c, _, step := clockedSearch(t, srv)
	h := c.Search.Host()
	ctx := context.Background()
	q := &lendgraph.HostSearchRequest{Q: "smi"}
	if _, err := h.Search(ctx, lendgraph.IndexOriginators, q); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		step(100 * time.Millisecond)
		srv.RevokeSearchTokens()
		srv.ResetRequests()
		if _, err := h.Search(ctx, lendgraph.IndexOriginators, q); err != nil {
			t.Fatalf("search %d after revoking: %v", i+1, err)
		}
		if n, m := srv.CountRequests(http.MethodPost, "/indexes/*/search"), srv.SearchTokenMints(); n != 2 || m != 2+i {
			t.Fatalf("revocation %d: %d searches, %d mints; want 2 and %d", i+1, n, m, 2+i)
		}
	}

	// A host that refuses every token: 3 seconds of searches every 10ms.
	srv2 := searchServer(t)
	c2, _, step2 := clockedSearch(t, srv2)
	srv2.InjectFault(http.MethodPost, "/indexes/*/search", lendgraphtest.Fault{Status: 401, Times: -1,
		Header: map[string]string{"Content-Type": "application/json"},
		Body:   `{"message":"The provided API key is invalid.","code":"invalid_api_key","type":"auth","link":"https://docs.meilisearch.com/errors#invalid_api_key"}`})
	const seconds = 3
	for range seconds * 100 {
		if _, err := c2.Search.Host().Search(ctx, lendgraph.IndexOriginators, q); !errors.Is(err, lendgraph.ErrUnauthorized) {
			t.Fatalf("err = %v", err)
		}
		step2(10 * time.Millisecond)
	}
	if m := srv2.SearchTokenMints(); m > 2*seconds+2 {
		t.Fatalf("%d mints in %d seconds of refusals, want at most %d", m, seconds, 2*seconds+2)
	}
}
