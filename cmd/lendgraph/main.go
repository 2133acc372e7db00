// Command lendgraph is the LendGraph command line tool for data engineers:
// pull bulk deliveries, export beyond one delivery, convert delivery files
// and exports, enrich properties, search, list, count and fetch records,
// send any API request, and run the fake API as a standalone server.
//
// The API key comes from $LENDGRAPH_API_KEY or --api-key-file, never from a
// flag value (which would land in shell history). Data goes to stdout,
// messages to stderr.
//
// Exit codes: 0 success, 1 failure (API or I/O), 2 usage error,
// 3 insufficient credits (top up and retry), 75 an export run task whose
// shards another task is submitting (retry later), 130 interrupted.
//
// Prompts and progress bars appear when stdin and stderr are terminals;
// elsewhere progress is plain lines on stderr and commands that would ask
// need --yes. For tests only, LENDGRAPH_ASSUME_TTY=1 makes the tool behave
// as on a terminal (the answers to prompts are read from stdin).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first Ctrl-C cancels ctx and lets the command clean up (and ask
	// whether to cancel a server job); a second one ends the process.
	context.AfterFunc(ctx, stop)
	assumeTTY := os.Getenv(envAssumeTTY) == "1"
	code := run(ctx, os.Args[1:], env{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv,
		interactive: assumeTTY || isTerminal(os.Stdin) && isTerminal(os.Stderr),
		bars:        assumeTTY || isTerminal(os.Stderr),
	})
	stop()
	os.Exit(code)
}
