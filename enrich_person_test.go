package lendgraph_test

import (
	"encoding/json"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

func TestPerson_Flags(t *testing.T) {
	in := `{"name":{"first":"A","nick":"Al"},"dnc":"Y","litigator":{"value":"true","since":"2020"},"death":0,
		"phoneNumbers":[{"number":"+1","type":"pager","score":7.5,"carrier":"x"}],"future":[1,2]}`
	var p lendgraph.Person
	if err := json.Unmarshal([]byte(in), &p); err != nil {
		t.Fatal(err)
	}
	if f := p.Flags(); !f.DNC || !f.Litigator || f.Death {
		t.Fatalf("flags %+v", f)
	}
	if p.PhoneNumbers[0].Type != "pager" || !p.Extra.Has("future") || !p.Name.Extra.Has("nick") {
		t.Fatalf("%+v", p)
	}
	out, _ := json.Marshal(p)
	for _, want := range []string{`"future":[1,2]`, `"litigator":{"value":"true","since":"2020"}`, `"carrier":"x"`, `"dnc":"Y"`} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("re-marshalled %s lacks %s", out, want)
		}
	}
	var nested lendgraph.Person
	if err := json.Unmarshal([]byte(`{"flags":{"Litigator":"y","deceased":true},"dnc":false}`), &nested); err != nil {
		t.Fatal(err)
	}
	if f := nested.Flags(); f.DNC || !f.Litigator || !f.Death {
		t.Fatalf("nested flags %+v", f)
	}
	for _, bad := range []string{`{"dnc":null}`, `{"dnc":[true]}`, `{"dnc":"maybe"}`} {
		var q lendgraph.Person
		if err := json.Unmarshal([]byte(bad), &q); err != nil || q.Flags().DNC {
			t.Fatalf("%s: %v %+v", bad, err, q.Flags())
		}
	}
}
