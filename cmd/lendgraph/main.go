// Command lendgraph is the LendGraph command line tool for data engineers:
// pull bulk deliveries, convert delivery files, enrich properties, search,
// list and fetch records, and run the fake API as a standalone server.
//
// The API key comes from $LENDGRAPH_API_KEY or --api-key-file, never from a
// flag value (which would land in shell history). Data goes to stdout,
// messages to stderr.
//
// Exit codes: 0 success, 1 failure (API or I/O), 2 usage error,
// 3 insufficient credits (top up and retry), 130 interrupted.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], env{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
		getenv: os.Getenv, interactive: isTerminal(os.Stdin) && isTerminal(os.Stderr),
	})
	stop()
	os.Exit(code)
}
