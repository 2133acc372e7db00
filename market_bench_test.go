package lendgraph_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// movementBody is a most-gained answer of 100 rows.
func movementBody() []byte {
	var b strings.Builder
	b.WriteString(`{"data":[`)
	for i := range 100 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"companyName":"Company %d","companyNmlsId":"%d","gained":%d,"lost":%d,"net":%d,"units":%d,"volume":%d.5,"avgLoanSize":312000.25,"volumeTruncated":false,"extra":"x"}`,
			i, 2000000+i, 100-i, i%7, 100-i-i%7, 40*i, 9000000*i)
	}
	b.WriteString(`],"truncated":false,"window":{"startDate":"2025-11-01","endDate":"2026-10-31","months":12}}`)
	return []byte(b.String())
}

// BenchmarkMovementDecodeBaseline is the floor: encoding/json into a map.
func BenchmarkMovementDecodeBaseline(b *testing.B) {
	body := movementBody()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMovementDecode decodes into the typed response, unknown members kept.
func BenchmarkMovementDecode(b *testing.B) {
	body := movementBody()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var r lendgraph.MostGainedResult
		if err := r.UnmarshalJSON(body); err != nil {
			b.Fatal(err)
		}
	}
}
