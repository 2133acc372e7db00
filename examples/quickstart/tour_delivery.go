package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// tourDelivery delivers 5,000 agents as gzipped ndjson and as csv, streams
// the rows of each while the file downloads, and shows the same aggregate.
// (Parquet deliveries are read by package parquet, a module of its own:
// see its Example.)
func tourDelivery(t tour) error {
	fmt.Fprintln(t.out, "\n== Bulk delivery ==")
	if t.srv != nil {
		// Above 1,000 rows needs the bulk-delivery.agents entitlement.
		t.srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 5000})
	}
	var first string
	for _, f := range []lendgraph.Format{lendgraph.FormatNDJSON, lendgraph.FormatCSV} {
		job, err := t.c.Agents.Deliver(t.ctx, &lendgraph.DeliveryRequest{
			Format: f,
			Sort:   []lendgraph.Sort{{Field: "transactionCount", Order: lendgraph.Desc}},
			Fields: []string{"id", "fullName", "state", "transactionCount"},
			Limit:  5000,
		})
		if err != nil {
			return fmt.Errorf("delivering agents as %s: %w", f, err)
		}
		st, err := job.Wait(t.ctx, lendgraph.WithPollInterval(20*time.Millisecond, 200*time.Millisecond),
			lendgraph.WithProgress(func(s *lendgraph.DeliveryStatus) {
				fmt.Fprintf(t.out, "  %s: %-9s %5d of %d rows, %7d bytes\n", f, s.Status, s.Processed, s.EstimatedTotal, s.Bytes)
			}))
		if err != nil {
			return err
		}
		// Rows decodes the file as it downloads, one row at a time.
		byState := map[string]int{}
		var rows, deals int64
		for a, err := range job.Rows(t.ctx) {
			if err != nil {
				return err
			}
			rows++
			byState[a.State]++
			deals += a.TransactionCount
		}
		states := slices.SortedFunc(maps.Keys(byState), func(a, b string) int {
			return cmp.Or(byState[b]-byState[a], cmp.Compare(a, b))
		})[:3]
		summary := fmt.Sprintf("%d rows, %d transactions; top states:", rows, deals)
		for _, s := range states {
			summary += fmt.Sprintf(" %s %d", s, byState[s])
		}
		charged := "not billed yet"
		if st.CreditsCharged != nil {
			charged = fmt.Sprintf("%g credits", *st.CreditsCharged)
		}
		fmt.Fprintf(t.out, "%s: %s (%s)\n", f, summary, charged)
		if first == "" {
			first = summary
		} else if summary == first {
			fmt.Fprintln(t.out, "ndjson and csv gave the same rows")
		} else {
			return fmt.Errorf("ndjson and csv disagree: %q vs %q", first, summary)
		}
	}
	return nil
}
