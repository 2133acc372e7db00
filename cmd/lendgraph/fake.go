package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func (a *app) fakeCommand() *cobra.Command {
	var addr string
	var rows int
	var seed int64
	cmd := &cobra.Command{
		Use:   "fake",
		Short: "Run the fake LendGraph API as a standalone server",
		Long: `fake runs the in-process fake API (package lendgraphtest) as a server, so test
harnesses in any language can use it. It prints the base URL and API keys, then
serves until interrupted.`,
		Example: `  lendgraph fake --addr 127.0.0.1:8080 --rows 100000 --seed 7
  lendgraph fake > fake.env & sleep 1; . ./fake.env   # exports the URL and key
  lendgraph fake --json --addr 127.0.0.1:0            # {"baseUrl":…,"keys":[…]}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rows <= 0 {
				return usagef("--rows must be positive")
			}
			srv, err := lendgraphtest.Start(lendgraphtest.WithAddr(addr), lendgraphtest.WithDefaultRows(rows), lendgraphtest.WithSeed(seed))
			if err != nil {
				return err
			}
			defer srv.Close()
			other := srv.NewCaller("org_other")
			def := srv.DefaultCaller()
			if a.jsonOut {
				if err := a.writeJSONLine(map[string]any{
					"baseUrl": srv.URL, "storageUrl": srv.StorageURL(),
					"keys": []map[string]string{
						{"key": def.Key, "userId": def.UserID, "orgId": def.OrgID},
						{"key": other.Key, "userId": other.UserID, "orgId": other.OrgID},
					},
				}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.stdout, "export LENDGRAPH_BASE_URL=%s\nexport LENDGRAPH_API_KEY=%s\n", srv.URL, def.Key)
				fmt.Fprintf(a.stdout, "# another organization's key: %s\n", other.Key)
			}
			fmt.Fprintln(a.stderr, "fake LendGraph API serving; Ctrl-C to stop")
			<-cmd.Context().Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on")
	cmd.Flags().IntVar(&rows, "rows", 10_000, "records per resource")
	cmd.Flags().Int64Var(&seed, "seed", 1, "dataset seed")
	return cmd
}
