package lendgraph_test

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// agentRow is every member of the fake's agent summary, typed: the row
// type a data engineer declares for a delivery.
type agentRow struct {
	ID                  string  `json:"id"`
	FirstName           string  `json:"firstName"`
	LastName            string  `json:"lastName"`
	FullName            string  `json:"fullName"`
	Email               string  `json:"email"`
	Phone               string  `json:"phone"`
	City                string  `json:"city"`
	State               string  `json:"state"`
	Zip                 string  `json:"zip"`
	Brokerage           string  `json:"brokerage"`
	TransactionCount    int64   `json:"transactionCount"`
	Volume              float64 `json:"volume"`
	LastTransactionDate string  `json:"lastTransactionDate"`
	LicenseNumber       string  `json:"licenseNumber"`
	IsTeamLead          bool    `json:"isTeamLead"`
	Office              struct {
		Name  string `json:"name"`
		City  string `json:"city"`
		State string `json:"state"`
	} `json:"office"`
	Tags []string `json:"tags"`
}

var allFormats = []lendgraph.Format{lendgraph.FormatNDJSON, lendgraph.FormatJSON, lendgraph.FormatCSV, lendgraph.FormatParquet}

func collect[T any](t testing.TB, seq iter.Seq2[T, error]) []T {
	t.Helper()
	var out []T
	for v, err := range seq {
		if err != nil {
			t.Fatalf("after %d rows: %v", len(out), err)
		}
		out = append(out, v)
	}
	return out
}

// deliver submits and waits for a delivery of agents.
func deliver(t *testing.T, c *lendgraph.Client, req *lendgraph.DeliveryRequest) (*lendgraph.DeliveryJob[lendgraph.Agent], *lendgraph.DeliveryStatus) {
	t.Helper()
	ctx := context.Background()
	job, err := c.Agents.Deliver(ctx, req)
	if err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	st, err := job.Wait(ctx, lendgraph.WithPollInterval(time.Millisecond, 5*time.Millisecond))
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return job, st
}

func newDeliveryServer(t *testing.T, opts ...lendgraphtest.Option) (*lendgraphtest.Server, *lendgraph.Client) {
	srv := lendgraphtest.NewServer(t, append([]lendgraphtest.Option{lendgraphtest.WithDefaultRows(3000)}, opts...)...)
	return srv, srv.Client()
}

func TestDeliveryFormatsYieldIdenticalRows(t *testing.T) {
	srv, c := newDeliveryServer(t)
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 5000})
	ctx := context.Background()
	sortDesc := []lendgraph.Sort{{Field: "transactionCount", Order: lendgraph.Desc}}
	want := collect(t, c.Agents.All(ctx, &lendgraph.ListRequest{Sort: sortDesc, Pagination: &lendgraph.Pagination{Size: 100}}))
	var typed [][]agentRow
	for _, f := range allFormats {
		job, st := deliver(t, c, &lendgraph.DeliveryRequest{Sort: sortDesc, Format: f})
		if st.Format != f || st.Processed != 3000 || st.Bytes <= 0 || *st.ChargedCount != 3000 {
			t.Fatalf("%s status: %+v", f, st)
		}
		agents := collect(t, job.Rows(ctx))
		if len(agents) != len(want) {
			t.Fatalf("%s: %d rows, want %d", f, len(agents), len(want))
		}
		for i := range want {
			a, w := agents[i], want[i]
			if a.ID != w.ID || a.FullName != w.FullName || a.City != w.City || a.State != w.State || a.TransactionCount != w.TransactionCount {
				t.Fatalf("%s row %d: %+v, want %+v", f, i, a, w)
			}
			if f != lendgraph.FormatCSV && !cmp.Equal(a.Extra, w.Extra) {
				t.Fatalf("%s row %d extra: %s", f, i, cmp.Diff(w.Extra, a.Extra))
			}
		}
		typed = append(typed, collect(t, lendgraph.DeliveryJobAs[agentRow](job).Rows(ctx)))
	}
	for i := 1; i < len(typed); i++ {
		if d := cmp.Diff(typed[0], typed[i]); d != "" {
			t.Fatalf("%s rows differ from ndjson: %s", allFormats[i], d)
		}
	}
	if typed[0][0].Office.City == "" || len(typed[0][0].Tags) == 0 {
		t.Fatalf("nested fields not decoded: %+v", typed[0][0])
	}
}
