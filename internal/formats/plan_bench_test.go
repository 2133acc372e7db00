package formats

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// benchRows are rows shaped like the nested-row benchmark file's
// (testdata/bench/make_bench.sh): 7 scalar members, a list of 0-3 tags
// and an office object.
func benchRows(n int) [][]byte {
	rows := make([][]byte, n)
	for i := range rows {
		tags := []string{`[]`, `["luxury"]`, `["luxury","investors"]`, `["luxury","investors","relocation"]`}[i%4]
		rows[i] = fmt.Appendf(nil, `{"id":"agt_%08d","fullName":"Bo Haddad","city":"Miami","state":"FL","transactionCount":%d,"volume":%d.%02d,"isTeamLead":%t,"tags":%s,"office":{"name":"Office %d","phone":"555-%04d","zip":"%05d","agents":%d}}`,
			i, i*37%500, i*7919%100000, i%100, i%7 == 0, tags, i%5000, i%10000, i*13%99999, i%40)
	}
	return rows
}

type benchNested struct {
	ID               string   `json:"id"`
	FullName         string   `json:"fullName"`
	City             string   `json:"city"`
	State            string   `json:"state"`
	TransactionCount int64    `json:"transactionCount"`
	Volume           float64  `json:"volume"`
	IsTeamLead       bool     `json:"isTeamLead"`
	Tags             []string `json:"tags"`
	Office           struct {
		Name   string `json:"name"`
		Phone  string `json:"phone"`
		Zip    string `json:"zip"`
		Agents int64  `json:"agents"`
	} `json:"office"`
}

// benchAgent is lendgraph.Agent's shape: five typed members, the others
// kept whole.
type benchAgent struct {
	ID               string         `json:"id"`
	FullName         string         `json:"fullName,omitempty"`
	City             string         `json:"city,omitempty"`
	State            string         `json:"state,omitempty"`
	TransactionCount int64          `json:"transactionCount,omitempty"`
	Extra            jsontext.Value `json:",unknown"`
}

// BenchmarkPlan is the direct scan alone, on one goroutine, a row at a
// time into a reused row (as a worker decodes a batch).
func BenchmarkPlan(b *testing.B) {
	rows := benchRows(4096)
	b.Run("nested", func(b *testing.B) { benchPlan[benchNested](b, rows) })
	b.Run("Agent", func(b *testing.B) { benchPlan[benchAgent](b, rows) })
}

func benchPlan[T any](b *testing.B, rows [][]byte) {
	d := RowDecoder[T](slowUnmarshal, false)()
	out := make([]T, len(rows))
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		clear(out)
		for i, r := range rows {
			if err := d.JSON(r, &out[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	// CPU time, not wall time: on a shared machine the wall time is the
	// other processes' as much as this one's.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/float64(len(rows)), "cpu-ns/row")
}

// cpuTime is the CPU time the process has used (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
