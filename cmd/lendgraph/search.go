package main

import "github.com/spf13/cobra"

func (a *app) searchCommand() *cobra.Command {
	return &cobra.Command{Use: "search QUERY", Hidden: true, RunE: func(*cobra.Command, []string) error { return usagef("search: not yet") }}
}
