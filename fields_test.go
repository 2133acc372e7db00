package lendgraph_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lendgraph/lendgraph-go"
)

// A tag means the same thing when the SDK writes a request and when a
// record is marshalled: omitempty leaves out a zero number.
func TestRecord_OmitEmptyLikeEncodingJSON(t *testing.T) {
	for _, v := range []any{
		lendgraph.Agent{ID: "agt_1"},
		&lendgraph.Agent{ID: "agt_1"},
		lendgraph.Page[lendgraph.Agent]{Data: []lendgraph.Agent{{ID: "agt_1"}}},
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{`"transactionCount"`, `"fullName"`, `"Extra"`} {
			if json.Valid(b) && contains(b, bad) {
				t.Errorf("%T marshals %s: %s", v, bad, b)
			}
		}
	}
}

// Every record that keeps unknown members writes them back inline, under
// encoding/json, and never as an "Extra" member.
func TestRecord_UnknownMembersInline(t *testing.T) {
	in := []byte(`{"id":"x","fresh":{"a":[1,2]},"n":0}`)
	for _, v := range []any{new(lendgraph.Agent), new(lendgraph.DeliveryStatus), new(lendgraph.EnrichJobStatus), new(lendgraph.Count)} {
		if err := json.Unmarshal(in, v); err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if contains(out, `"Extra"`) || !contains(out, `"fresh":{"a":[1,2]}`) || !contains(out, `"n":0`) {
			t.Errorf("%T re-marshals to %s", v, out)
		}
	}
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }
