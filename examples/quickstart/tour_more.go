package main

import (
	"fmt"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// tourMore shows market movement (waiting through 202 computing), a
// location suggestion and a dry-run CRM push.
func tourMore(t tour) error {
	fmt.Fprintln(t.out, "\n== Market movement: companies that gained the most loan officers in Texas")
	res, err := t.c.Market.MostGained(t.ctx, &lendgraph.MostGainedRequest{State: "TX", Limit: 3},
		lendgraph.WithProgress(func(p *lendgraph.MovementProgress) {
			fmt.Fprintf(t.out, "   (server is computing; asked to repeat the request after %s)\n", p.RetryAfter.Round(time.Millisecond))
		}))
	if err != nil {
		return fmt.Errorf("most gained: %w", err)
	}
	fmt.Fprintf(t.out, "   window %s .. %s (%d months)\n", res.Window.StartDate, res.Window.EndDate, res.Window.Months)
	for _, r := range res.Data {
		fmt.Fprintf(t.out, "   %-28s gained %3d  lost %3d  net %+4d\n", r.CompanyName, r.Gained, r.Lost, r.Net)
	}

	fmt.Fprintln(t.out, "\n== Location suggestion for \"Aus\"")
	sug, err := t.c.Locations.Suggest(t.ctx, "Aus", 1)
	if err != nil {
		return fmt.Errorf("suggest: %w", err)
	}
	for _, s := range sug {
		fmt.Fprintf(t.out, "   %s (%s, id %s, source %s)\n", s.PlaceFormatted, s.Type, s.ID, s.Source)
	}

	fmt.Fprintln(t.out, "\n== External CRM push, dry run (nothing written or charged)")
	push, err := t.c.Integrations.PushCRM(t.ctx, &lendgraph.PushCRMRequest{
		Entity: lendgraph.CRMEntityAgent, Object: lendgraph.CRMObjectContact,
		IDs: []string{"agt_0000001", "agt_0000002"}, DryRun: true,
	})
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	for _, r := range push.Results {
		fmt.Fprintf(t.out, "   %s would be %s\n", r.ID, r.Status)
	}
	fmt.Fprintf(t.out, "   charged %g credits (%s)\n", push.Billing.Charged, push.Billing.Note)
	return nil
}
