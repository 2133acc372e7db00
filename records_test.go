package lendgraph_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/go-cmp/cmp"
	lendgraph "github.com/lendgraph/lendgraph-go"
)

func TestRecords_UnknownFieldsRoundTrip(t *testing.T) {
	srv := smallServer(t)
	ctx := context.Background()
	a, err := srv.Client().Agents.Get(ctx, "agt_0000003")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"email", "recentTransactions", "office", "tags"} {
		if !a.Extra.Has(k) {
			t.Fatalf("member %q not kept: %v", k, a.Extra.Names())
		}
	}
	var office struct{ Name, City, State string }
	if err := a.Extra.Decode("office", &office); err != nil || office.City != a.City {
		t.Fatalf("office %+v %v", office, err)
	}
	raw := srv.Dataset().Record("agents", 3)
	rawJSON, _ := json.Marshal(raw)
	for name, codec := range map[string]struct {
		marshal   func(any) ([]byte, error)
		unmarshal func([]byte, any) error
	}{
		"encoding/json": {json.Marshal, json.Unmarshal},
		"json v2": {func(v any) ([]byte, error) { return jsonv2.Marshal(v) },
			func(b []byte, v any) error { return jsonv2.Unmarshal(b, v) }},
	} {
		b, err := codec.marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var back, want map[string]any
		_ = json.Unmarshal(b, &back)
		_ = json.Unmarshal(rawJSON, &want)
		// A typed field tagged omitempty holding its zero value is left out,
		// as encoding/json leaves it out of a request: one meaning per tag.
		for _, k := range []string{"fullName", "city", "state", "transactionCount"} {
			if v, ok := want[k]; ok && (v == float64(0) || v == "") {
				delete(want, k)
			}
		}
		if d := cmp.Diff(want, back); d != "" {
			t.Fatalf("%s: re-marshalled record differs from what the server sent: %s", name, d)
		}
		var again lendgraph.Agent
		if err := codec.unmarshal(b, &again); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(*a, again); d != "" {
			t.Fatalf("%s: round trip: %s", name, d)
		}
		// Pages of records too.
		var page lendgraph.Page[lendgraph.Agent]
		if err := codec.unmarshal([]byte(`{"data":[`+string(b)+`],"total":1,"extraTop":1}`), &page); err != nil || page.Data[0].Extra.Has("email") == false {
			t.Fatalf("%s: page decode %v", name, err)
		}
	}
}

func TestRecords_UnknownEnumValues(t *testing.T) {
	var l lendgraph.Loan
	if err := json.Unmarshal([]byte(`{"id":"l","transactionType":"reverse_mortgage","mortgageAmount":1e5,"newField":[1]}`), &l); err != nil {
		t.Fatal(err)
	}
	if l.TransactionType != "reverse_mortgage" || !l.Extra.Has("newField") {
		t.Fatalf("%+v", l)
	}
	b, _ := json.Marshal(l)
	if !strings.Contains(string(b), `"transactionType":"reverse_mortgage"`) {
		t.Fatalf("%s", b)
	}
	var s lendgraph.Sort
	if err := json.Unmarshal([]byte(`{"field":"x","order":"nulls_last"}`), &s); err != nil || s.Order != "nulls_last" {
		t.Fatalf("%+v %v", s, err)
	}
}
