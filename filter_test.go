package lendgraph_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// A filter nested past the limit, or In with no values, is refused before
// any request, at once.
func TestFilter_ValidateBounds(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(10))
	deep := lendgraph.Eq("state", "TX")
	for range 10000 {
		deep = lendgraph.Not(deep)
	}
	start := time.Now()
	for name, f := range map[string]*lendgraph.Filter{"deep": deep, "empty in": lendgraph.In("city")} {
		_, err := srv.Client().Agents.List(context.Background(), &lendgraph.ListRequest{AdvancedFilters: f})
		var ia *lendgraph.InvalidArgumentError
		if !errors.As(err, &ia) {
			t.Errorf("%s: %v, want *InvalidArgumentError", name, err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refusing took %s", d)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	ok := lendgraph.Eq("state", "TX")
	for range 60 {
		ok = lendgraph.Not(ok)
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("60 levels: %v", err)
	}
}

// A filter value that cannot be encoded is an *InvalidArgumentError, and
// nothing is sent.
func TestFilter_Unencodable(t *testing.T) {
	c, rec := recordingClient(t)
	for name, req := range map[string]*lendgraph.ListRequest{
		"flat":     {FlatFilters: map[string]any{"state": make(chan int)}},
		"advanced": {AdvancedFilters: lendgraph.Eq("state", func() {})},
	} {
		_, err := c.Agents.List(context.Background(), req)
		var ia *lendgraph.InvalidArgumentError
		if !errors.As(err, &ia) {
			t.Errorf("%s: %v, want *InvalidArgumentError", name, err)
		}
	}
	if rec.received != 0 {
		t.Fatalf("%d requests reached the server", rec.received)
	}
}

func TestFilter_MarshalJSON(t *testing.T) {
	f := lendgraph.And(
		lendgraph.Eq("state", "CA"),
		lendgraph.Or(lendgraph.Gte("transactionCount", 10), lendgraph.Lt("volume", 0)),
		lendgraph.Not(lendgraph.In("city", "Fresno", "San Jose")),
		lendgraph.Ne("isTeamLead", false),
		lendgraph.Gt("zip", "9"), lendgraph.Lte("volume", 1e6),
	)
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"and":[{"field":"state","op":"eq","value":"CA"},` +
		`{"or":[{"field":"transactionCount","op":"gte","value":10},{"field":"volume","op":"lt","value":0}]},` +
		`{"not":{"field":"city","op":"in","value":["Fresno","San Jose"]}},` +
		`{"field":"isTeamLead","op":"ne","value":false},{"field":"zip","op":"gt","value":"9"},` +
		`{"field":"volume","op":"lte","value":1000000}]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back lendgraph.Filter
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(&back)
	if string(b2) != want {
		t.Fatalf("round trip %s", b2)
	}
	// The fake evaluates the same tree.
	srv := smallServer(t)
	page, err := srv.Client().Agents.List(context.Background(), &lendgraph.ListRequest{AdvancedFilters: f, Pagination: &lendgraph.Pagination{Size: 100}})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range page.Data {
		if a.State != "CA" || a.City == "Fresno" || a.City == "San Jose" || a.TransactionCount < 10 {
			t.Fatalf("row %+v does not match", a)
		}
	}
}
