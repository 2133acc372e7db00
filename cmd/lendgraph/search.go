package main

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

var searchEntities = []string{"originators", "companies", "agents", "offices"}

func (a *app) searchCommand() *cobra.Command {
	var entities []string
	var limit int
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Instant search over originators, companies, agents and offices",
		Long: `search runs a typeahead query (POST /v1/instant-search) and prints the matches
as a table (entity, id, name, city, state) on stdout; with --json the API's
answer as one JSON object.`,
		Example: `  lendgraph search smi
  lendgraph search "rocket mort" --entity companies --entity offices --limit 10 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &lendgraph.InstantSearchRequest{Query: args[0], Limit: limit}
			for _, e := range entities {
				if !slices.Contains(searchEntities, e) {
					return usagef("--entity %q: use originators, companies, agents or offices", e)
				}
				req.Entities = append(req.Entities, lendgraph.SearchEntity(e))
			}
			a.blameArg("Query", "QUERY", args[0])
			a.blameFlags(cmd, map[string]string{"Limit": "limit", "Entities": "entity"})
			c, err := a.clientFor()
			if err != nil {
				return err
			}
			res, err := c.Search.Instant(cmd.Context(), req)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.writeJSONLine(res)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ENTITY\tID\tNAME\tCITY\tSTATE")
			people := func(entity string, ms []lendgraph.PersonMatch) {
				for _, m := range ms {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", entity, m.ID, strings.TrimSpace(m.FirstName+" "+m.LastName), m.City, m.State)
				}
			}
			orgs := func(entity string, ms []lendgraph.OrganizationMatch) {
				for _, m := range ms {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", entity, m.ID, m.Name, m.City, m.State)
				}
			}
			people("originator", res.Originators)
			orgs("company", res.Companies)
			people("agent", res.Agents)
			orgs("office", res.Offices)
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&entities, "entity", nil, "search only these: originators, companies, agents, offices (repeatable or comma-separated)")
	f.IntVar(&limit, "limit", 0, "matches per entity type, 1 to 50 (default 5)")
	return cmd
}
