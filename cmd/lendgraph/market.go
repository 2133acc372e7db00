package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

func (a *app) marketCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "market",
		Short:   "Market movement: where loan officers move",
		Example: `  lendgraph market most-gained --state TX --limit 5`,
		Args:    cobra.NoArgs,
	}
	cmd.AddCommand(a.mostGainedCommand())
	return cmd
}

func (a *app) mostGainedCommand() *cobra.Command {
	var p lendgraph.MostGainedRequest
	var dateRange, rankBy string
	var categories []string
	cmd := &cobra.Command{
		Use:   "most-gained",
		Short: "Rank the companies that gained the most loan officers",
		Long: `most-gained ranks companies by the loan officers they gained (or by net gain
with --rank-by net) over a date window. A table goes to stdout; with --json
the API's answer as one JSON object. The server may answer "computing" first:
the command waits until the ranking is ready (Ctrl-C stops waiting).`,
		Example: `  lendgraph market most-gained --state TX --limit 5
  lendgraph market most-gained --states CA,NV --date-range 2024 --category BANK,CU --rank-by net
  lendgraph market most-gained --state TX --city Austin --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p.DateRange, p.RankBy = lendgraph.DateRange(dateRange), lendgraph.RankBy(rankBy)
			for _, c := range categories {
				p.CompanyCategories = append(p.CompanyCategories, lendgraph.CompanyCategory(strings.ToUpper(c)))
			}
			a.blameFlags(cmd, map[string]string{"State": "state", "States": "states", "City": "city", "DateRange": "date-range",
				"RankBy": "rank-by", "Limit": "limit", "CompanyCategories": "category"})
			if err := p.Validate(); err != nil {
				return err
			}
			c, err := a.clientFor()
			if err != nil {
				return err
			}
			res, err := c.Market.MostGained(cmd.Context(), &p)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.writeJSONLine(res)
			}
			a.say("window %s to %s (%d months)", res.Window.StartDate, res.Window.EndDate, res.Window.Months)
			if res.Truncated {
				a.say("the server cut the ranking short")
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "#\tGAINED\tLOST\tNET\tUNITS\tVOLUME\tNMLS\tCOMPANY")
			for i, r := range res.Data {
				fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%.0f\t%s\t%s\n", i+1, r.Gained, r.Lost, r.Net, r.Units, r.Volume, r.CompanyNMLSID, r.CompanyName)
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&dateRange, "date-range", "", "last_12_months (default), last_N_months, year_to_date, YYYY, fy_YYYY, all_time")
	f.StringVar(&p.State, "state", "", "two-letter state of the loan officers' current location")
	f.StringSliceVar(&p.States, "states", nil, "more states, comma-separated (ORed)")
	f.StringVar(&p.City, "city", "", "exact city (with --state)")
	f.StringSliceVar(&categories, "category", nil, "company categories: BANK, CU, OTHER (comma-separated)")
	f.StringVar(&rankBy, "rank-by", "", "count (default) or net")
	f.IntVar(&p.Limit, "limit", 0, "rows, 1 to 100 (default 10)")
	return cmd
}
