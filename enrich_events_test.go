package lendgraph_test

import (
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

func TestParseEnrichmentEvent(t *testing.T) {
	for _, body := range []string{`{"name":"delivery.completed"}`, `{"payload":{}}`, `[1]`} {
		if _, err := lendgraph.ParseEnrichmentEvent([]byte(body)); err == nil {
			t.Errorf("%s: accepted", body)
		}
	}
	ev, err := lendgraph.ParseEnrichmentEvent([]byte(`{"type":"enrichment.bulk.whatever","data":{"jobId":"j"},"id":"e1"}`))
	if err != nil || ev.Name != "enrichment.bulk.whatever" || string(ev.Payload) != `{"jobId":"j"}` || !ev.Extra.Has("id") {
		t.Fatalf("%v %+v", err, ev)
	}
}
