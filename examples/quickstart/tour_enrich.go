package main

import (
	"errors"
	"fmt"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// tourEnrichment enriches one property twice (a charged lookup, then a free
// cache hit), runs a bulk job of 500 properties with a progress line, and
// summarises its results. Property ids come from a property search, so the
// tour works the same against the real API (where it spends credits: one
// per match, at most 501).
func tourEnrichment(t tour) error {
	fmt.Fprintln(t.out, "\n== Owner enrichment")
	var ids []string
	for p, err := range t.c.Properties.All(t.ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100}}) {
		if err != nil {
			return err
		}
		if ids = append(ids, p.ID); len(ids) == 500 {
			break
		}
	}
	if len(ids) == 0 {
		fmt.Fprintln(t.out, "no properties to enrich")
		return nil
	}

	for _, label := range []string{"enrich", "again"} {
		r, err := t.c.Properties.Enrich(t.ctx, ids[0], nil)
		var ice *lendgraph.InsufficientCreditsError
		if errors.As(err, &ice) {
			fmt.Fprintf(t.out, "not enough credits: balance %v, cost %v; top up to continue\n", ice.Balance, ice.Cost)
			return nil
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(t.out, "%-7s %s: reason=%s charged=%v cached=%v persons=%d\n",
			label, ids[0], r.Reason, r.Charged, r.Cached, len(r.Data.Persons))
		if r.EarlierAttemptMayHaveCharged {
			// A repeat after a lost answer: the lost attempt may have been charged.
			fmt.Fprintln(t.out, "        an earlier attempt's answer was lost; it may have been charged")
		}
	}

	job, err := t.c.Properties.EnrichBulk(t.ctx, ids, nil)
	var ice *lendgraph.InsufficientCreditsError
	if errors.As(err, &ice) {
		fmt.Fprintf(t.out, "bulk needs the worst case covered: balance %v, cost %v\n", ice.Balance, ice.Cost)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(t.out, "bulk job: %d properties, worst case %d credits\n", job.PropertyCount, job.EstimatedCost)
	st, err := job.Wait(t.ctx, lendgraph.WithProgress(func(s *lendgraph.EnrichJobStatus) {
		fmt.Fprintf(t.out, "  %-9s %d/%d handled\n", s.Status, s.Handled(), s.Total)
	}))
	if err != nil {
		return err
	}
	fmt.Fprintf(t.out, "charged %d credits once, at completion (%d from cache, %d failed)\n",
		st.ChargedCount, st.FromCache, st.Failed)

	var matched, empty, failed int
	var example string
	for e, err := range job.ResultRows(t.ctx) {
		if err != nil {
			return err
		}
		switch {
		case e.Error != "":
			failed++
		case len(e.Persons) == 0:
			empty++
		default:
			matched++
			if example == "" {
				p := e.Persons[0]
				example = fmt.Sprintf("%s: %s, %d phones, %d emails", e.PropertyID, p.Name.Full, len(p.PhoneNumbers), len(p.Emails))
			}
		}
	}
	fmt.Fprintf(t.out, "results: %d with owners, %d without, %d failed; e.g. %s\n", matched, empty, failed, example)
	return nil
}
