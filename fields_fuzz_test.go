package lendgraph_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// mapOptions are the SDK's JSON rules as they decoded and wrote a record
// whose unknown members were a map of raw values.
var mapOptions = jsonv2.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true),
	jsonv2.FormatNilSliceAsNull(true), jsonv2.FormatNilMapAsNull(true), jsonv1.OmitEmptyWithLegacySemantics(true), jsonv2.Deterministic(true))

// agentMap is lendgraph.Agent with its unknown members fully decoded
// into a map.
type agentMap struct {
	ID               string                     `json:"id"`
	FullName         string                     `json:"fullName,omitempty"`
	City             string                     `json:"city,omitempty"`
	State            string                     `json:"state,omitempty"`
	TransactionCount int64                      `json:"transactionCount,omitempty"`
	Extra            map[string]json.RawMessage `json:",unknown"`
}

// FuzzFields: a Fields, which keeps its members as the bytes sent and
// decodes one when it is read, answers every question as the fully
// decoded map does (length, names, lookups, iteration, Decode), and a
// record marshals to the bytes it did with the map, whether the object is
// a Row of its own, a record's Extra (through encoding/json's Unmarshal,
// the SDK's row decoder, or a page of records) or built by Set.
func FuzzFields(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1}`, `{"b":2,"a":1}`, `{"a":1,"a":{"x":[1,2]}}`, `{ "a" : 1 , "b" : [ 1 , 2 ] }`,
		`{"id":"x","email":"e","office":{"city":"Austin"},"tags":["a"],"n":12345678901234567890}`,
		`{"\u0041":1,"A":2,"caf\u00e9":3,"café":4}`, "{\"x\xff\":1,\"y\":\"\xfe\"}", `{"":null,"z":true,"y":false}`,
		`{"id":"a","fullName":"F","city":"C","state":"S","transactionCount":3,"volume":1.50}`,
		`{"transactionCount":"12"}`, `{"deep":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
		`{"a\"b":1,"a\\b":2,"\u2028":3,"<&>":"<&>"}`, `[1]`, `null`, `"x"`, `{"a":1`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want map[string]json.RawMessage
		if err := jsonv2.Unmarshal(b, &want, mapOptions); err != nil || want == nil {
			// Not an object: UnmarshalJSON fails as the map does (null is
			// no members, and no error).
			var row lendgraph.Row
			if rerr := row.UnmarshalJSON(b); (err == nil) != (rerr == nil) || err == nil && row.Len() != 0 {
				t.Fatalf("%q: UnmarshalJSON: %v, the map's: %v", b, rerr, err)
			}
			return
		}
		var row lendgraph.Row
		if err := row.UnmarshalJSON(b); err != nil {
			t.Fatalf("%q: UnmarshalJSON: %v", b, err)
		}
		sameAsMap(t, "Row", row, want)
		if got, err := json.Marshal(row); err != nil || string(got) != string(mustMarshal(t, want)) {
			t.Fatalf("%q: Row marshals to %q (%v), want %q", b, got, err, mustMarshal(t, want))
		}
		for _, r := range collectRows(t, b) {
			sameAsMap(t, "DecodeRows Row", r, want)
		}

		// A record: the typed members in fields, the others in Extra.
		var am agentMap
		if jsonv2.Unmarshal(b, &am, mapOptions) != nil {
			return
		}
		var a lendgraph.Agent
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatalf("%q: json.Unmarshal into Agent: %v", b, err)
		}
		sameAgent(t, "json.Unmarshal", a, am)
		var page lendgraph.Page[lendgraph.Agent]
		if err := json.Unmarshal([]byte(`{"data":[`+string(b)+`,`+string(b)+`],"total":2}`), &page); err != nil || len(page.Data) != 2 {
			t.Fatalf("%q: a page: %v", b, err)
		}
		sameAgent(t, "page", page.Data[1], am)
		// Rows match names up to case, '_' and '-' (see DecodeRows).
		var folded agentMap
		if jsonv2.Unmarshal(b, &folded, mapOptions, jsonv2.MatchCaseInsensitiveNames(true)) == nil {
			for _, r := range collectAgents(t, b) {
				sameAgent(t, "DecodeRows Agent", r, folded)
			}
		}
		// Built member by member with Set.
		var built lendgraph.Fields
		for _, k := range slices.Sorted(maps.Keys(am.Extra)) {
			if err := built.Set(k, am.Extra[k]); err != nil {
				t.Fatalf("%q: Set %q: %v", b, k, err)
			}
		}
		if !built.Equal(a.Extra) {
			t.Fatalf("%q: Set built %q, want %q", b, built.Names(), a.Extra.Names())
		}
	})
}

func mustMarshal(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameAgent(t *testing.T, how string, a lendgraph.Agent, am agentMap) {
	t.Helper()
	if a.ID != am.ID || a.FullName != am.FullName || a.City != am.City || a.State != am.State || a.TransactionCount != am.TransactionCount {
		t.Fatalf("%s: %+v, want %+v", how, a, am)
	}
	sameAsMap(t, how+" Extra", a.Extra, am.Extra)
	got, err := json.Marshal(a)
	want, werr := jsonv2.Marshal(am, mapOptions)
	if werr == nil {
		want, werr = json.Marshal(json.RawMessage(want)) // as encoding/json writes a MarshalJSON's output
	}
	if err != nil || werr != nil || string(got) != string(want) {
		t.Fatalf("%s: marshals to %s (%v), want %s (%v)", how, got, err, want, werr)
	}
}

// sameAsMap checks every read of f against the map m.
func sameAsMap(t *testing.T, how string, f lendgraph.Fields, m map[string]json.RawMessage) {
	t.Helper()
	names := slices.Sorted(maps.Keys(m))
	if f.Len() != len(m) || !slices.Equal(f.Names(), names) && len(m) > 0 {
		t.Fatalf("%s: %d members %q, want %d %q", how, f.Len(), f.Names(), len(m), names)
	}
	i := 0
	for k, v := range f.All() {
		if i >= len(names) || k != names[i] || string(v) != string(m[k]) {
			t.Fatalf("%s: All yields %q %s at %d, want %q", how, k, v, i, names)
		}
		i++
	}
	for k, v := range m {
		got, ok := f.Get(k)
		if !ok || string(got) != string(v) || !f.Has(k) {
			t.Fatalf("%s: Get(%q) = %s %v, want %s", how, k, got, ok, v)
		}
		var x, y any
		err := f.Decode(k, &x)
		werr := jsonv2.Unmarshal(v, &y, mapOptions)
		if (err == nil) != (werr == nil) || err == nil && !equalJSON(x, y) {
			t.Fatalf("%s: Decode(%q) = %v (%v), want %v (%v)", how, k, x, err, y, werr)
		}
	}
	if _, ok := f.Get("\x00absent"); ok && m["\x00absent"] == nil {
		t.Fatalf("%s: Get of an absent member", how)
	}
	if !f.Equal(f) {
		t.Fatalf("%s: not Equal to itself", how)
	}
}

func equalJSON(x, y any) bool {
	a, _ := json.Marshal(x)
	b, _ := json.Marshal(y)
	return bytes.Equal(a, b)
}

func collectRows(t *testing.T, b []byte) []lendgraph.Row {
	if bytes.IndexByte(b, '\n') >= 0 {
		return nil
	}
	var out []lendgraph.Row
	for r, err := range lendgraph.DecodeRows[lendgraph.Row](bytes.NewReader(b), lendgraph.FormatNDJSON) {
		if err != nil {
			t.Fatalf("%q: DecodeRows: %v", b, err)
		}
		out = append(out, r)
	}
	return out
}

func collectAgents(t *testing.T, b []byte) []lendgraph.Agent {
	var out []lendgraph.Agent
	in := append(append([]byte{'['}, b...), ']')
	for r, err := range lendgraph.DecodeRows[lendgraph.Agent](bytes.NewReader(in), lendgraph.FormatJSON) {
		if err != nil {
			t.Fatalf("%q: DecodeRows: %v", b, err)
		}
		out = append(out, r)
	}
	return out
}
