package lendgraph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

	"github.com/lendgraph/lendgraph-go/internal/leakcheck"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func hasPrefixFold(s, p string) bool {
	return strings.HasPrefix(strings.ToLower(s), strings.ToLower(p))
}

func TestInstantValidationSendsNothing(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client()
	for _, tc := range []struct {
		name string
		req  *lendgraph.InstantSearchRequest
		arg  string
	}{
		{"nil", nil, "Query"},
		{"empty query", &lendgraph.InstantSearchRequest{}, "Query"},
		{"blank query", &lendgraph.InstantSearchRequest{Query: "  "}, "Query"},
		{"negative limit", &lendgraph.InstantSearchRequest{Query: "a", Limit: -1}, "Limit"},
		{"limit over 50", &lendgraph.InstantSearchRequest{Query: "a", Limit: 51}, "Limit"},
		{"unknown entity", &lendgraph.InstantSearchRequest{Query: "a", Entities: []lendgraph.SearchEntity{"loans"}}, "Entities"},
		{"duplicate entity", &lendgraph.InstantSearchRequest{Query: "a", Entities: []lendgraph.SearchEntity{lendgraph.EntityAgents, lendgraph.EntityAgents}}, "Entities"},
		{"filter outside entities", &lendgraph.InstantSearchRequest{Query: "a", Entities: []lendgraph.SearchEntity{lendgraph.EntityAgents},
			Filters: map[lendgraph.SearchEntity]string{lendgraph.EntityCompanies: "state = TX"}}, "Filters"},
		{"empty filter", &lendgraph.InstantSearchRequest{Query: "a", Filters: map[lendgraph.SearchEntity]string{lendgraph.EntityAgents: " "}}, "Filters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Search.Instant(context.Background(), tc.req)
			var ia *lendgraph.InvalidArgumentError
			if !errors.As(err, &ia) || ia.Arg != tc.arg {
				t.Fatalf("err = %v, want InvalidArgumentError on %s", err, tc.arg)
			}
		})
	}
	// Host queries are checked before a token is minted too.
	for _, tc := range []struct {
		index lendgraph.SearchIndex
		req   *lendgraph.HostSearchRequest
	}{
		{"", nil},
		{"a/b", nil},
		{lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Limit: -1}},
		{lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Offset: -5}},
	} {
		var ia *lendgraph.InvalidArgumentError
		if _, err := c.Search.Host().Search(context.Background(), tc.index, tc.req); !errors.As(err, &ia) {
			t.Fatalf("Search(%q, %+v) = %v, want InvalidArgumentError", tc.index, tc.req, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent for invalid arguments", n)
	}
}

func TestInstantSearchAllEntities(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client()
	res, err := c.Search.Instant(context.Background(), &lendgraph.InstantSearchRequest{Query: "smi"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Originators) != lendgraph.DefaultInstantLimit || len(res.Agents) != lendgraph.DefaultInstantLimit {
		t.Fatalf("got %d originators, %d agents, want the default %d each", len(res.Originators), len(res.Agents), lendgraph.DefaultInstantLimit)
	}
	for _, o := range res.Originators {
		if o.ID == "" || o.City == "" || o.State == "" || !o.Extra.Has("companyName") ||
			!(hasPrefixFold(o.FirstName, "smi") || hasPrefixFold(o.LastName, "smi")) {
			t.Fatalf("originator %+v", o)
		}
	}
	// No company or office name starts with "smi": empty, not nil.
	if res.Companies == nil || len(res.Companies) != 0 || res.Offices == nil || len(res.Offices) != 0 {
		t.Fatalf("companies %v, offices %v", res.Companies, res.Offices)
	}
	b, _ := json.Marshal(res)
	if !bytes.Contains(b, []byte(`"companies":[]`)) || !bytes.Contains(b, []byte(`"companyName"`)) {
		t.Fatalf("marshalled: %s", b)
	}
	// The default limit is sent.
	reqs := srv.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, `"limit":5`) {
		t.Fatalf("sent %s", body)
	}
	res, err = c.Search.Instant(context.Background(), &lendgraph.InstantSearchRequest{Query: "summit"})
	if err != nil || len(res.Companies) == 0 || len(res.Offices) == 0 || !hasPrefixFold(res.Companies[0].Name, "summit") || res.Companies[0].City == "" {
		t.Fatalf("companies %+v offices %+v err %v", res.Companies, res.Offices, err)
	}
}

func TestInstantSearchLimitsAndFilters(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client()
	res, err := c.Search.Instant(context.Background(), &lendgraph.InstantSearchRequest{
		Query:    "j",
		Entities: []lendgraph.SearchEntity{lendgraph.EntityOriginators, lendgraph.EntityAgents},
		Limit:    12,
		Filters: map[lendgraph.SearchEntity]string{
			lendgraph.EntityOriginators: "state = TX",
			lendgraph.EntityAgents:      `state = CA AND city = "San Diego"`,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Originators) != 12 || len(res.Agents) == 0 || len(res.Agents) > 12 {
		t.Fatalf("%d originators, %d agents", len(res.Originators), len(res.Agents))
	}
	if len(res.Companies) != 0 || len(res.Offices) != 0 {
		t.Fatal("entity types not asked for came back")
	}
	for _, o := range res.Originators {
		var states []string
		if err := o.Extra.Decode("states", &states); err != nil || !slices.Contains(states, "TX") {
			t.Fatalf("originator %+v outside TX", o)
		}
	}
	for _, a := range res.Agents {
		if a.State != "CA" || a.City != "San Diego" {
			t.Fatalf("agent %+v outside San Diego, CA", a)
		}
	}
	// A filter the server cannot read is its 400, an *APIError.
	_, err = c.Search.Instant(context.Background(), &lendgraph.InstantSearchRequest{Query: "j",
		Filters: map[lendgraph.SearchEntity]string{lendgraph.EntityAgents: "zip = 78701"}})
	var ae *lendgraph.APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest {
		t.Fatalf("err = %v, want a 400 APIError", err)
	}
}

func TestInstantSearchUnavailable(t *testing.T) {
	srv := searchServer(t)
	ctx := context.Background()
	// A 503 is retried like a read.
	srv.InjectFault(http.MethodPost, "/v1/instant-search", lendgraphtest.Fault{Status: http.StatusServiceUnavailable,
		Header: map[string]string{"Retry-After": "0"}, Body: `{"error":"search backend temporarily unavailable"}`})
	if _, err := srv.Client().Search.Instant(ctx, &lendgraph.InstantSearchRequest{Query: "smi"}); err != nil {
		t.Fatal(err)
	}
	if n := srv.CountRequests(http.MethodPost, "/v1/instant-search"); n != 2 {
		t.Fatalf("%d requests, want 2 (one retry)", n)
	}
	// Not configured: recognisable once the retries give up.
	srv.SetSearchConfigured(false)
	_, err := srv.Client(lendgraph.WithMaxRetries(0)).Search.Instant(ctx, &lendgraph.InstantSearchRequest{Query: "smi"})
	if !errors.Is(err, lendgraph.ErrUnavailable) || !strings.Contains(err.Error(), "not configured") {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func TestSearchTokenOneMintForManyCallers(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client()
	ts := c.Search.TokenSource()
	var wg sync.WaitGroup
	toks := make([]*lendgraph.SearchToken, 100)
	errs := make([]error, 100)
	for i := range 100 {
		wg.Go(func() { toks[i], errs[i] = ts.Token(context.Background()) })
	}
	wg.Wait()
	for i := range toks {
		if errs[i] != nil || toks[i] != toks[0] {
			t.Fatalf("caller %d: %v, %p vs %p", i, errs[i], toks[i], toks[0])
		}
	}
	if n := srv.SearchTokenMints(); n != 1 {
		t.Fatalf("%d mints, want 1", n)
	}
	tok := toks[0]
	if tok.Host != srv.SearchHostURL() || len(tok.Indexes) != 4 || tok.ExpiresAt.Before(srv.Now()) {
		t.Fatalf("token %v", tok)
	}
	if c.Search.TokenSource() != ts {
		t.Fatal("TokenSource is not shared")
	}
}

func TestSearchTokenRefreshedWithinMargin(t *testing.T) {
	srv := searchServer(t)
	srv.SetSearchTokenTTL(time.Minute) // margin: 6s
	c := srv.Client()
	lendgraph.SetSearchClock(c, srv.Now)
	ts := c.Search.TokenSource()
	ctx := context.Background()
	t1, err := ts.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Advance(53 * time.Second)
	if t2, _ := ts.Token(ctx); t2 != t1 || srv.SearchTokenMints() != 1 {
		t.Fatal("token replaced before its margin")
	}
	srv.Advance(2 * time.Second) // 5s left: inside the margin, not expired
	t3, err := ts.Token(ctx)
	if err != nil || t3 == t1 || t3.Token == t1.Token || srv.SearchTokenMints() != 2 {
		t.Fatalf("token not replaced inside its margin: %v, mints %d", err, srv.SearchTokenMints())
	}
	// The replacement is used by the host: no refusal, one request.
	srv.ResetRequests()
	if _, err := c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"}); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

func TestSearchTokenErrorsNotCachedAndContextHonoured(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client(lendgraph.WithMaxRetries(0))
	ts := c.Search.TokenSource()
	srv.InjectFault(http.MethodGet, "/v1/search-token", lendgraphtest.Fault{Status: 500, Body: `{"error":"boom"}`})
	if _, err := ts.Token(context.Background()); err == nil {
		t.Fatal("want the mint's error")
	}
	if _, err := ts.Token(context.Background()); err != nil {
		t.Fatalf("error was cached: %v", err)
	}

	// A mint that hangs: a waiter with a cancelled context returns at once;
	// when the minting caller gives up, a waiter that still wants a token mints.
	c = srv.Client()
	ts = c.Search.TokenSource()
	srv.InjectFault(http.MethodGet, "/v1/search-token", lendgraphtest.Fault{Kind: lendgraphtest.Stall, Delay: time.Minute})
	ctxA, cancelA := context.WithCancel(context.Background())
	aDone := make(chan error, 1)
	go func() { _, err := ts.Token(ctxA); aDone <- err }()
	for srv.CountRequests(http.MethodGet, "/v1/search-token") < 3 {
		time.Sleep(time.Millisecond) // wait for the stalled request to arrive
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ts.Token(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter: %v", err)
	}
	bDone := make(chan error, 1)
	go func() { _, err := ts.Token(context.Background()); bDone <- err }()
	cancelA()
	if err := <-aDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("minting caller: %v", err)
	}
	if err := <-bDone; err != nil {
		t.Fatalf("waiter after the minting caller gave up: %v", err)
	}
}

func TestSearchHostSearch(t *testing.T) {
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

func TestSearchHostReMintsOnceOnRefusal(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client()
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
	// Revoked: 401, re-mint, retry.
	srv.RevokeSearchTokens()
	if _, err := h.Search(ctx, lendgraph.IndexOriginators, q); err != nil || srv.SearchTokenMints() != 3 {
		t.Fatalf("after revoking: %v, %d mints", err, srv.SearchTokenMints())
	}
	// A host that keeps refusing: one retry, then its error.
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

func TestSearchHostRotationWhileInFlight(t *testing.T) {
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

func TestSearchHostFollowsTokenHost(t *testing.T) {
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

func TestSearchTokenNeverPrinted(t *testing.T) {
	srv := searchServer(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := srv.Client(lendgraph.WithLogger(logger))
	ctx := context.Background()
	tok, err := c.Search.TokenSource().Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"}); err != nil {
		t.Fatal(err)
	}
	srv.InjectFault(http.MethodPost, "/indexes/*/search", lendgraphtest.Fault{Status: 403, Times: -1,
		Body: `{"message":"expired","code":"invalid_api_key","type":"auth","link":""}`})
	_, hostErr := c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
	if !errors.Is(hostErr, lendgraph.ErrForbidden) {
		t.Fatalf("err = %v", hostErr)
	}
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("token", "tok", tok, "val", *tok)
	logger.Info("token", "tok", tok)
	printed := fmt.Sprintf("%v %+v %#v %s %q %v %+v %#v %s", tok, tok, tok, tok, tok, *tok, *tok, *tok, tok.String()) +
		hostErr.Error() + fmt.Sprintf("%+v %#v", hostErr, hostErr) + logs.String()
	var tokens []string
	for _, r := range srv.Requests() {
		if a := r.Header.Get("Authorization"); r.Listener == "search" && a != "" {
			tokens = append(tokens, strings.TrimPrefix(a, "Bearer "))
		}
	}
	if len(tokens) < 3 {
		t.Fatalf("saw %d tokens", len(tokens))
	}
	for _, secret := range append(tokens, srv.DefaultCaller().Key) {
		if strings.Contains(printed, secret) {
			t.Fatalf("a credential was printed: %s", printed)
		}
	}
	if !strings.Contains(printed, "[redacted]") || !strings.Contains(logs.String(), "/indexes/agents/search") {
		t.Fatalf("printed: %s", printed)
	}
}

func TestSearchTokenHandler(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client()
	h := c.Search.TokenHandler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/search-token", nil))
	if rec.Code != 200 || rec.Header().Get("Cache-Control") != "no-store" || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%d %v", rec.Code, rec.Header())
	}
	var got struct {
		Token     string    `json:"token"`
		Host      string    `json:"host"`
		Indexes   []string  `json:"indexes"`
		ExpiresAt time.Time `json:"expiresAt"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Token == "" || got.Host != srv.SearchHostURL() ||
		len(got.Indexes) != 4 || got.ExpiresAt.IsZero() {
		t.Fatalf("%v %s", err, rec.Body)
	}
	if strings.Contains(rec.Body.String(), srv.DefaultCaller().Key) {
		t.Fatal("the API key was served")
	}
	// What a browser does with it: query the host with the token alone.
	status, res := hostPost(t, srv, "originators", got.Token, "application/json", `{"q":"smi","limit":2}`)
	if status != 200 || !strings.HasPrefix(res["hits"], "[map[") || res["limit"] != "2" {
		t.Fatalf("browser query: %d %v", status, res)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/search-token", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", rec.Code)
	}
	srv.SetSearchConfigured(false)
	c2 := srv.Client(lendgraph.WithMaxRetries(0))
	rec = httptest.NewRecorder()
	c2.Search.TokenHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/search-token", nil))
	if rec.Code != http.StatusBadGateway || strings.Contains(rec.Body.String(), "lendgraph:") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// hostPost sends a raw search to the fake host.
func hostPost(t *testing.T, srv *lendgraphtest.Server, index, auth, contentType, body string) (int, map[string]string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.SearchHostURL()+"/indexes/"+index+"/search", strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	out := map[string]string{}
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return resp.StatusCode, out
}

func TestFakeSearchHostIsStrict(t *testing.T) {
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

func TestSearchNoGoroutineLeft(t *testing.T) {
	opt := leakcheck.IgnoreCurrent()
	srv, err := lendgraphtest.Start(lendgraphtest.WithDefaultRows(500))
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{}}
	c := srv.Client(lendgraph.WithHTTPClient(hc))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_, _ = c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
			_, _ = c.Search.Instant(ctx, &lendgraph.InstantSearchRequest{Query: "jo"})
		})
	}
	wg.Wait()
	srv.InjectFault("", "/v1/search-token", lendgraphtest.Fault{Kind: lendgraphtest.Stall, Delay: time.Minute})
	srv.RevokeSearchTokens()
	go cancel()
	_, _ = c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
	srv.Close()
	hc.CloseIdleConnections()
	leakcheck.VerifyNone(t, opt)
}

func TestSearchHostRetriesTransientFailures(t *testing.T) {
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

func TestFakeInstantSearchRules(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client(lendgraph.WithMaxRetries(0))
	ctx := context.Background()
	for _, body := range []map[string]any{
		{"query": ""},
		{},
		{"query": "jo", "limit": 0},
		{"query": "jo", "limit": 51},
		{"query": "jo", "entities": []string{"loans"}},
		{"query": "jo", "entities": []string{"agents"}, "filters": map[string]string{"companies": "state = TX"}},
		{"query": "jo", "filters": map[string]string{"agents": "state === TX"}},
		{"query": "jo", "filters": map[string]string{"agents": "zip = 78701"}},
	} {
		err := c.Do(ctx, http.MethodPost, "/v1/instant-search", body, nil)
		var ae *lendgraph.APIError
		if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Message == "" {
			t.Fatalf("%v: err = %v, want 400", body, err)
		}
	}
	var out struct {
		Results map[string][]map[string]any `json:"results"`
	}
	if err := c.Do(ctx, http.MethodPost, "/v1/instant-search", map[string]any{"query": "Jo", "limit": 50,
		"filters": map[string]string{"offices": `city = "Austin"`}}, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 4 || len(out.Results["agents"]) != 50 || len(out.Results["offices"]) != 0 {
		t.Fatalf("%d agents, %d offices", len(out.Results["agents"]), len(out.Results["offices"]))
	}
	if err := c.Do(ctx, http.MethodPost, "/v1/instant-search", map[string]any{"query": "Summ",
		"filters": map[string]string{"offices": `city = "Austin"`}}, &out); err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Results["offices"] {
		if o["city"] != "Austin" || !hasPrefixFold(fmt.Sprint(o["name"]), "summ") {
			t.Fatalf("office %v", o)
		}
	}
	if len(out.Results["offices"]) == 0 {
		t.Fatal("no Summit office in Austin")
	}
}

// A 200 whose body is cut half-way is retried like any read (issue 17,
// item 11): the server sees a second attempt and the caller gets the hits.
func TestSearchHostRetriesCutBody(t *testing.T) {
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
