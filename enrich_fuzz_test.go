package lendgraph_test

import (
	"bytes"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// FuzzDecodeEnrichmentResults: no input panics or hangs the results
// decoder; it yields entries, then at most one error, last.
func FuzzDecodeEnrichmentResults(f *testing.F) {
	for _, s := range []string{
		`{"propertyId":"p1","persons":[{"name":{"full":"A B"}}],"charged":true}` + "\n" + `{"propertyId":"p2","error":"no usable address"}`,
		`[{"propertyId":"p1","persons":[]},{"propertyId":"p2","extra":{"x":[1,2,3]}}]`,
		"\xef\xbb\xbf[]",
		`[{"propertyId":"p1"}] trailing`,
		`{"propertyId":"p1"`,
		"[1,2]",
		"",
		"<html>",
	} {
		f.Add([]byte(s))
		f.Add(gzipBytes(s))
	}
	f.Add(append(gzipBytes(`{"propertyId":"a"}`+"\n"), gzipBytes(`{"propertyId":"b"}`+"\n")...))
	f.Fuzz(func(t *testing.T, b []byte) {
		errs := 0
		for _, err := range lendgraph.DecodeEnrichmentResults(bytes.NewReader(b)) {
			if errs > 0 {
				t.Fatal("an entry or error after an error")
			}
			if err != nil {
				errs++
			}
		}
	})
}

// FuzzParseEnrichmentEvent: any body parses or fails cleanly; a parsed
// event has a name with the enrichment prefix, and its payload, when a
// job status, decodes or fails cleanly.
func FuzzParseEnrichmentEvent(f *testing.F) {
	for _, s := range []string{
		`{"name":"enrichment.bulk.completed","payload":{"jobId":"ejob_1","status":"completed","total":3,"succeeded":3}}`,
		`{"event":"enrichment.bulk.failed","data":{"jobId":"ejob_2","status":"failed","error":"provider"}}`,
		`{"type":"enrichment.bulk.cancelled","id":"evt_1","createdAt":"2026-01-01T00:00:00Z"}`,
		`{"name":"delivery.completed"}`,
		`{"name":1,"event":"enrichment.bulk.x","payload":null}`,
		`[]`, `null`, `{`, `{"name":"enrichment.bulk.completed","payload":{"jobId":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := lendgraph.ParseEnrichmentEvent(b)
		if err != nil {
			if ev != nil {
				t.Fatal("an event and an error")
			}
			return
		}
		if len(ev.Name) < len(lendgraph.EnrichmentEventPrefix) || ev.Name[:len(lendgraph.EnrichmentEventPrefix)] != lendgraph.EnrichmentEventPrefix {
			t.Fatalf("event name %q", ev.Name)
		}
		_, _ = ev.Job()
	})
}
