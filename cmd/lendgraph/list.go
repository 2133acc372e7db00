package main

import (
	"github.com/spf13/cobra"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

func (a *app) listCommand() *cobra.Command {
	var q queryFlags
	var all bool
	var size, limit int
	cmd := &cobra.Command{
		Use:   "list RESOURCE",
		Short: "List records as newline-delimited JSON",
		Example: `  lendgraph list agents --filter state=TX --sort transactionCount:desc --size 10
  lendgraph list loans --filter transactionType=purchase --period 2024 --all > loans.ndjson`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkResource(args[0]); err != nil {
				return err
			}
			flat, adv, period, sort, err := q.parts()
			if err != nil {
				return err
			}
			if size < 0 || size > lendgraph.MaxPageSize {
				return usagef("--size %d: a page holds 1 to %d records", size, lendgraph.MaxPageSize)
			}
			if limit < 0 {
				return usagef("--limit %d: give 0 or more records", limit)
			}
			q.blame(a)
			a.blameFlags(cmd, map[string]string{"Pagination.Size": "size"})
			c, err := a.clientFor()
			if err != nil {
				return err
			}
			res, _ := resourceOf(c, args[0])
			req := &lendgraph.ListRequest{FlatFilters: flat, AdvancedFilters: adv, Period: period, Sort: sort}
			if size > 0 {
				req.Pagination = &lendgraph.Pagination{Size: size}
			}
			if !all && limit == 0 {
				limit = size
				if limit == 0 {
					limit = 25
				}
			}
			n := 0
			for r, err := range res.all(cmd.Context(), req) {
				if err != nil {
					return err
				}
				if err := a.writeJSONLine(r); err != nil {
					return err
				}
				n++
				if limit > 0 && n >= limit {
					break
				}
			}
			return nil
		},
	}
	q.register(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "follow cursors through every page")
	cmd.Flags().IntVar(&size, "size", 0, "page size (1..100)")
	cmd.Flags().IntVar(&limit, "limit", 0, "stop after this many records (default: one page unless --all)")
	return cmd
}

func (a *app) getCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "get RESOURCE ID",
		Short:   "Fetch one complete record as JSON",
		Example: `  lendgraph get agents agt_0000042`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkResource(args[0]); err != nil {
				return err
			}
			c, err := a.clientFor()
			if err != nil {
				return err
			}
			a.blameArg("id", "ID", args[1])
			res, _ := resourceOf(c, args[0])
			r, err := res.get(cmd.Context(), args[1])
			if err != nil {
				return err
			}
			return a.writeJSONLine(r)
		},
	}
}
