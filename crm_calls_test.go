package lendgraph_test

import (
	"encoding/json"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

func TestCall_KeepsUnknown(t *testing.T) {
	var c lendgraph.Call
	in := `{"id":"c1","answeredBy":"fax","transcript":[{"speaker":"agent","text":"hi","confidence":0.9}],"aiActions":[{"type":"email","title":"t","channel":"x"}],"cost":0.2}`
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(c)
	for _, m := range []string{`"cost":0.2`, `"confidence":0.9`, `"channel":"x"`, `"answeredBy":"fax"`} {
		if !strings.Contains(string(out), m) {
			t.Fatalf("%s lost: %s", m, out)
		}
	}
}
