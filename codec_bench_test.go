package lendgraph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// agentPageJSON is a page of 100 agents shaped like the API's (and the
// fake's): five typed members and twelve others.
func agentPageJSON() []byte {
	var b bytes.Buffer
	b.WriteString(`{"cursor":"abc","data":[`)
	for i := range 100 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"brokerage":"Keller Williams","city":"Austin","email":"jane.doe%d@example.com","firstName":"Jane",`+
			`"fullName":"Jane Doe","id":"agt_%07d","isTeamLead":false,"lastName":"Doe","lastTransactionDate":"2025-07-01",`+
			`"licenseNumber":"TX01234567","office":{"city":"Austin","name":"Keller Williams Austin","state":"TX"},`+
			`"phone":"+15125550100","state":"TX","tags":["luxury"],"transactionCount":%d,"volume":12345678.9,"zip":"78701"}`, i, i, i)
	}
	b.WriteString(`],"total":100000}`)
	return b.Bytes()
}

// BenchmarkDecodeAgentPage isolates the client's decoding of one list page:
// the SDK (go-json-experiment, every member kept) against encoding/json into
// a struct of the typed fields only.
func BenchmarkDecodeAgentPage(b *testing.B) {
	body := agentPageJSON()
	b.Run("encoding-json-typed-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p struct {
				Data []struct {
					ID               string `json:"id"`
					FullName         string `json:"fullName"`
					City             string `json:"city"`
					State            string `json:"state"`
					TransactionCount int64  `json:"transactionCount"`
				} `json:"data"`
				Total  int64  `json:"total"`
				Cursor string `json:"cursor"`
			}
			if err := json.NewDecoder(bytes.NewReader(body)).Decode(&p); err != nil || len(p.Data) != 100 {
				b.Fatal(err)
			}
		}
	})
	b.Run("SDK", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p Page[Agent]
			if err := unmarshalMode(body, &p, false); err != nil || len(p.Data) != 100 || p.Data[0].Extra.Len() != 12 {
				b.Fatal(err)
			}
		}
	})
	b.Run("SDK-lenient", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p Page[Agent]
			if err := unmarshalMode(body, &p, true); err != nil || len(p.Data) != 100 || p.Data[0].Extra.Len() != 12 {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEncodeAgentPage is the SDK's encoding of one list page's
// records (the CLI's output path): every record checks for members a
// lenient decode set aside.
func BenchmarkEncodeAgentPage(b *testing.B) {
	var p Page[Agent]
	if err := unmarshalMode(agentPageJSON(), &p, false); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := marshal(p.Data); err != nil {
			b.Fatal(err)
		}
	}
}
