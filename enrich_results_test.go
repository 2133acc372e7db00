package lendgraph_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func TestEnrichJob_ResultsUseNewestLink(t *testing.T) {
	for _, bearer := range []bool{false, true} {
		srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(100), lendgraphtest.WithLinkTTL(time.Minute))
		var storageCalls atomic.Int32
		hc := &http.Client{Transport: hookTransport{api: srv.URL, before: func(*http.Request) {
			if storageCalls.Add(1) == 1 {
				srv.Advance(2 * time.Minute) // the first link expires on its way
			}
		}}}
		opts := []lendgraph.Option{lendgraph.WithHTTPClient(hc)}
		if bearer {
			opts = append(opts, lendgraph.WithBearerAuth())
		}
		c, ctx := srv.Client(opts...), context.Background()
		job, err := c.Properties.EnrichBulk(ctx, propertyIDs(srv, 100), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := job.Wait(ctx, lendgraph.WithPollInterval(time.Millisecond, 10*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		srv.ResetRequests()
		var buf bytes.Buffer
		if _, err := job.Download(ctx, &buf); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, err := range lendgraph.DecodeEnrichmentResults(&buf) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != 100 {
			t.Fatalf("%d rows", n)
		}
		var links []string
		var storage []lendgraphtest.Request
		for _, r := range srv.Requests() {
			if r.Listener == "storage" {
				storage = append(storage, r)
			} else if r.Method == "GET" {
				links = append(links, r.Path)
			}
		}
		// status → link 1 (expires) → 403 → status again → link 2 → 200
		if len(storage) != 2 || len(links) != 2 {
			t.Fatalf("%d storage requests, %d status fetches", len(storage), len(links))
		}
		q1, _ := url.ParseQuery(storage[0].Query)
		q2, _ := url.ParseQuery(storage[1].Query)
		if q1.Get("X-Expires") >= q2.Get("X-Expires") {
			t.Fatalf("the retry did not use the newer link: %s then %s", q1.Get("X-Expires"), q2.Get("X-Expires"))
		}
	}
}

func TestDecodeEnrichmentResults(t *testing.T) {
	ndjson := `{"propertyId":"p1","persons":[{"name":{"full":"A B"},"dnc":"Y"}],"extra":1}` + "\n\n" + `{"propertyId":"p2","persons":[]}` + "\n"
	array := `[ {"propertyId":"p1","persons":[]}, {"propertyId":"p2"} ]`
	gz := func(s string) string {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
		return b.String()
	}
	for name, in := range map[string]string{"ndjson": ndjson, "ndjson.gz": gz(ndjson), "array": array, "array.gz": gz(array)} {
		var got []string
		for e, err := range lendgraph.DecodeEnrichmentResults(strings.NewReader(in)) {
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got = append(got, e.PropertyID)
		}
		if strings.Join(got, ",") != "p1,p2" {
			t.Fatalf("%s: %v", name, got)
		}
	}
	for in, want := range map[string]string{
		"propertyId,persons\n":              "starts with",
		`{"propertyId":"p1"}` + "\n[1]\n":   "line 2",
		`[{"propertyId":"p1"}, 3]`:          "row 2",
		`[{"propertyId":"p1"}] {}`:          "after the array",
		`{"propertyId":"p1","persons":"x"}`: "line 1",
	} {
		var err error
		for _, e := range lendgraph.DecodeEnrichmentResults(strings.NewReader(in)) {
			if e != nil {
				err = e
			}
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one mentioning %q", in, err, want)
		}
	}
}

func TestDecodeEnrichmentResults_Bounds(t *testing.T) {
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

// hookTransport runs before each request to another host than the API.
type hookTransport struct {
	api    string
	before func(*http.Request)
}

func (h hookTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasPrefix(r.URL.String(), h.api) {
		h.before(r)
	}
	return http.DefaultTransport.RoundTrip(r)
}
