package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// countAnswer is what count prints with --json.
type countAnswer struct {
	Resource string `json:"resource"`
	Total    int64  `json:"total"`
	// Endpoint is the request that counted: a count endpoint, or the list
	// (its total, one record a page).
	Endpoint string `json:"endpoint"`
	// TotalIsLowerBound is the originator count's flag, as the service
	// sent it (the reference does not explain it); absent elsewhere.
	TotalIsLowerBound *bool `json:"totalIsLowerBound,omitempty"`
}

func (a *app) countCommand() *cobra.Command {
	var q queryFlags
	cmd := &cobra.Command{
		Use:   "count RESOURCE",
		Short: "Print how many records match a query",
		Long: `count prints the number of RESOURCE records that match the filters (the
same --filter, --where and --period as list, deliver and export take).
Nothing is charged.

originators and properties are counted by their count endpoints
(POST /v1/originators/count; POST /v1/properties/count, an exact count),
every other resource by the total of its list (one record a page). --json
prints {"resource", "total", "endpoint"}, and for originators the count's
totalIsLowerBound as the service sends it (a total it flags as a lower
bound is said so).`,
		Example: `  lendgraph count agents --filter state=TX
  lendgraph count loans --filter transactionType=purchase --period 2024 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkResource(args[0]); err != nil {
				return err
			}
			if len(q.sorts) > 0 {
				return usagef("--sort does not change a count: leave it out")
			}
			flat, adv, period, _, err := q.parts()
			if err != nil {
				return err
			}
			q.blame(a)
			c, err := a.clientFor()
			if err != nil {
				return err
			}
			req := &lendgraph.ListRequest{FlatFilters: flat, AdvancedFilters: adv, Period: period}
			ans, err := countOf(cmd.Context(), c, args[0], req)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.writeJSONLine(ans)
			}
			if ans.TotalIsLowerBound != nil && *ans.TotalIsLowerBound {
				_, err = fmt.Fprintf(a.stdout, "%d (the service reports this total as a lower bound)\n", ans.Total)
				return err
			}
			_, err = fmt.Fprintln(a.stdout, ans.Total)
			return err
		},
	}
	q.register(cmd)
	_ = cmd.Flags().MarkHidden("sort")
	return cmd
}

// countOf counts the records of resource matching req: with the count
// endpoint where the resource has one, else with the list total.
func countOf(ctx context.Context, c *lendgraph.Client, resource string, req *lendgraph.ListRequest) (*countAnswer, error) {
	ans := &countAnswer{Resource: resource}
	switch resource {
	case "originators":
		n, err := c.Originators.Count(ctx, req)
		if err != nil {
			return nil, err
		}
		ans.Total, ans.TotalIsLowerBound, ans.Endpoint = n.Total, &n.TotalIsLowerBound, "POST /v1/originators/count"
	case "properties":
		n, err := c.Properties.Count(ctx, req)
		if err != nil {
			return nil, err
		}
		ans.Total, ans.Endpoint = n.Total, "POST /v1/properties/count"
	default:
		res, err := resourceOf(c, resource)
		if err != nil {
			return nil, err
		}
		one := *req
		one.Pagination = &lendgraph.Pagination{Size: 1}
		if ans.Total, err = res.total(ctx, &one); err != nil {
			return nil, err
		}
		ans.Endpoint = "POST /v1/" + resource
	}
	return ans, nil
}
