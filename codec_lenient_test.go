package lendgraph_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// One record of the wrong type: a page with "transactionCount":"12".
const sloppyPage = `{"data":[{"id":"agt_1","fullName":"A","transactionCount":"12","office":{"id":"o1"}},` +
	`{"id":"agt_2","fullName":"B","transactionCount":3}],"total":2,"cursor":""}`

func TestWithLenientDecoding(t *testing.T) {
	srv := smallServer(t)
	srv.InjectFault(http.MethodPost, "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 200,
		Header: map[string]string{"Content-Type": "application/json"}, Body: sloppyPage, Times: -1})

	// Strict by default: the whole page fails.
	_, err := srv.Client().Agents.List(context.Background(), nil)
	var de *lendgraph.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("strict: err = %v, want a *DecodeError", err)
	}

	check := func(name string, p *lendgraph.Page[lendgraph.Agent], err error) {
		t.Helper()
		if err != nil || len(p.Data) != 2 {
			t.Fatalf("%s: %v", name, err)
		}
		a := p.Data[0]
		if a.ID != "agt_1" || a.FullName != "A" || a.TransactionCount != 0 {
			t.Fatalf("%s: record %+v", name, a)
		}
		if got := a.InvalidFields(); !slices.Equal(got, []string{"transactionCount"}) {
			t.Fatalf("%s: InvalidFields = %v", name, got)
		}
		var raw string
		if err := a.Extra.Decode("transactionCount", &raw); err != nil || raw != "12" {
			t.Fatalf("%s: raw value %q, %v", name, raw, err)
		}
		if string(member(a.Extra, "office")) != `{"id":"o1"}` {
			t.Fatalf("%s: unknown member lost: %v", name, a.Extra)
		}
		if b := p.Data[1]; b.TransactionCount != 3 || b.InvalidFields() != nil {
			t.Fatalf("%s: second record %+v", name, b)
		}
	}
	p, err := srv.Client(lendgraph.WithLenientDecoding(true)).Agents.List(context.Background(), nil)
	check("client option", p, err)
	p, err = srv.Client().Agents.List(context.Background(), nil, lendgraph.WithLenientDecoding(true))
	check("call option", p, err)
	// A call may also turn a lenient client strict.
	_, err = srv.Client(lendgraph.WithLenientDecoding(true)).Agents.List(
		context.Background(), nil, lendgraph.WithLenientDecoding(false))
	if !errors.As(err, &de) {
		t.Fatalf("strict call on a lenient client: err = %v", err)
	}
	// Iterators take the option too.
	var n int
	for a, err := range srv.Client(lendgraph.WithLenientDecoding(true)).Agents.All(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		_ = a
	}
	if n != 2 {
		t.Fatalf("All yielded %d records", n)
	}
	// Malformed JSON still fails in lenient mode.
	srv.ClearFaults()
	srv.InjectFault(http.MethodPost, "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 200,
		Header: map[string]string{"Content-Type": "application/json"}, Body: `{"data":[{"id":"agt_1",}]}`})
	if _, err := srv.Client(lendgraph.WithLenientDecoding(true)).Agents.List(context.Background(), nil); !errors.As(err, &de) {
		t.Fatalf("malformed JSON, lenient: err = %v", err)
	}
}

// Nested records are lenient one by one, and a record decoded leniently
// marshals back with the value as sent, once.
func TestWithLenientDecoding_Nested(t *testing.T) {
	srv := smallServer(t)
	srv.InjectFault(http.MethodGet, "/v1/sloppy", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 200,
		Header: map[string]string{"Content-Type": "application/json"},
		Body:   `{"data":{"persons":[{"name":{"full":5,"first":"Ann"}}]},"charged":"yes","reason":"member_cache_hit"}`})
	var r lendgraph.EnrichResult
	ctx := context.Background()
	if err := srv.Client().Do(ctx, http.MethodGet, "/v1/sloppy", nil, &r, lendgraph.WithLenientDecoding(true)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.InvalidFields(), []string{"charged"}) || r.Reason != lendgraph.ReasonMemberCacheHit || len(r.Data.Persons) != 1 {
		t.Fatalf("outer record: %v %+v", r.InvalidFields(), r)
	}
	name := r.Data.Persons[0].Name
	if !slices.Equal(name.InvalidFields(), []string{"full"}) || name.First != "Ann" || name.Full != "" {
		t.Fatalf("nested record: %v %+v", name.InvalidFields(), name)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]json.RawMessage
	if err := json.Unmarshal(b, &back); err != nil || string(back["charged"]) != `"yes"` || strings.Count(string(b), `"charged"`) != 1 {
		t.Fatalf("marshalled back: %s (%v)", b, err)
	}
}

func TestDecodeRows_Lenient(t *testing.T) {
	for f, file := range map[lendgraph.Format]string{
		lendgraph.FormatJSON: `[{"id":"agt_1","transactionCount":"12x"},{"id":"agt_2","transactionCount":4}]`,
		lendgraph.FormatCSV:  "id,transactionCount\nagt_1,12x\nagt_2,4\n",
	} {
		// Strict: the rows end at the first that does not fit.
		var rowErr *lendgraph.RowError
		if err := firstErr(lendgraph.DecodeRows[lendgraph.Agent](strings.NewReader(file), f)); !errors.As(err, &rowErr) {
			t.Fatalf("%s strict: err = %v, want a *RowError", f, err)
		}
		var got []lendgraph.Agent
		for a, err := range lendgraph.DecodeRows[lendgraph.Agent](strings.NewReader(file), f, lendgraph.WithLenientDecoding(true)) {
			if err != nil {
				t.Fatalf("%s lenient: %v", f, err)
			}
			got = append(got, a)
		}
		if len(got) != 2 || got[0].ID != "agt_1" || got[0].TransactionCount != 0 || !slices.Equal(got[0].InvalidFields(), []string{"transactionCount"}) ||
			string(member(got[0].Extra, "transactionCount")) != `"12x"` || got[1].TransactionCount != 4 || got[1].InvalidFields() != nil {
			t.Fatalf("%s lenient: %+v", f, got)
		}
	}
}

// A nested object that is not a record of its own (a branch's location)
// with one member that does not fit: lenient decoding leaves the whole
// field zero and keeps the object, as sent, in Extra (InvalidFields names
// it), whether the branch comes from an answer or from a delivery file of
// any format.
func TestWithLenientDecoding_NestedObjectOneBadMember(t *testing.T) {
	const location = `{"lat":"north","lon":-97.7}`
	check := func(how string, b lendgraph.Branch) {
		t.Helper()
		if b.ID != "b1" || b.City != "Austin" || b.Location != nil || !slices.Equal(b.InvalidFields(), []string{"location"}) || member(b.Extra, "location") != location {
			t.Errorf("%s: %+v, invalid %v, location %s", how, b, b.InvalidFields(), member(b.Extra, "location"))
		}
	}
	srv := smallServer(t)
	srv.InjectFault(http.MethodPost, "/v1/companies/{nmlsId}/branches", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 200,
		Header: map[string]string{"Content-Type": "application/json"},
		Body:   `{"data":[{"id":"b1","location":` + location + `,"city":"Austin"}],"total":1,"cursor":""}`})
	page, err := srv.Client(lendgraph.WithLenientDecoding(true)).Companies.Branches(context.Background(), "123", nil)
	if err != nil || len(page.Data) != 1 {
		t.Fatalf("answer: %v", err)
	}
	check("answer", page.Data[0])
	for f, file := range map[lendgraph.Format][]byte{
		lendgraph.FormatNDJSON: gzipBytes(`{"id":"b1","location":` + location + `,"city":"Austin"}` + "\n"),
		lendgraph.FormatJSON:   []byte(`[{"id":"b1","location":` + location + `,"city":"Austin"}]`),
		lendgraph.FormatCSV:    []byte("id,location,city\nb1,\"" + strings.ReplaceAll(location, `"`, `""`) + "\",Austin\n"),
	} {
		rows, err := decodeAll[lendgraph.Branch](t, file, f, lendgraph.WithLenientDecoding(true))
		if err != nil || len(rows) != 1 {
			t.Fatalf("%s: %d rows, %v", f, len(rows), err)
		}
		check(string(f), rows[0])
	}
}

// Empty csv cells leave pointer fields nil, as a null does in the other
// formats, on the direct scan and on the path through JSON alike (a row
// type the scan does not take goes that way: here, for its `inline` tag
// option).
func TestDecodeRows_EmptyCSVCellsNilPointersOnEveryPath(t *testing.T) {
	type office struct {
		Zip string `json:"zip"`
	}
	type direct struct {
		ID     string   `json:"id"`
		N      *int64   `json:"n"`
		S      *string  `json:"s"`
		B      *bool    `json:"b"`
		Office *office  `json:"office"`
		Tags   []string `json:"tags"`
	}
	type viaJSON struct {
		Row direct `json:",inline"` // the direct scan leaves `inline` to jsonv2
	}
	file := []byte("id,n,s,b,office,tags\na,,,,,\nb,1,x,true,\"{\"\"zip\"\":\"\"02134\"\"}\",\"[\"\"t\"\"]\"\n")
	d, err := decodeAll[direct](t, file, lendgraph.FormatCSV)
	if err != nil || len(d) != 2 {
		t.Fatalf("direct: %d rows, %v", len(d), err)
	}
	v, err := decodeAll[viaJSON](t, file, lendgraph.FormatCSV)
	if err != nil || len(v) != 2 {
		t.Fatalf("through JSON: %d rows, %v", len(v), err)
	}
	for how, rows := range map[string][]direct{"direct": d, "through JSON": {v[0].Row, v[1].Row}} {
		if r := rows[0]; r.ID != "a" || r.N != nil || r.S != nil || r.B != nil || r.Office != nil || r.Tags != nil {
			t.Errorf("%s: empty cells: %+v", how, r)
		}
		if r := rows[1]; r.N == nil || *r.N != 1 || r.S == nil || *r.S != "x" || r.B == nil || !*r.B || r.Office == nil || r.Office.Zip != "02134" || len(r.Tags) != 1 {
			t.Errorf("%s: full cells: %+v", how, r)
		}
	}
}
