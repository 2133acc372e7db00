package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitCredits     = 3
	exitBusy        = 75 // EX_TEMPFAIL: a task's shards are another task's for now; retry later
	exitInterrupted = 130
)

// busyError is a task (export run --shard) whose shards another task is
// submitting: nothing failed, and nothing is done yet; an orchestrator
// retries it later.
type busyError struct{ msg string }

func (e *busyError) Error() string { return e.msg }

// env is the outside world a command sees; tests substitute it.
type env struct {
	stdin       io.Reader
	stdout      io.Writer
	stderr      io.Writer
	getenv      func(string) string
	interactive bool // stdin and stderr are terminals: prompts
	bars        bool // stderr is a terminal: progress bars instead of lines
}

// envAssumeTTY, set to 1, makes the tool behave as on a terminal (prompts
// and progress bars) whatever stdin and stderr are. It exists for tests
// that script the prompts through a pipe; people never need it.
const envAssumeTTY = "LENDGRAPH_ASSUME_TTY"

// app holds the global flags and the lazily built client.
type app struct {
	env
	apiKeyFile string
	baseURL    string
	jsonOut    bool
	apiKey     string // the key clientFor used; api redacts it from answers
	client     *lendgraph.Client
	clientOpts []lendgraph.Option // a command's own client settings
	started    bool               // cobra accepted the command line and ran the command
	cmdPath    string             // the command that ran, for the usage hint
	in         *bufio.Reader      // stdin, buffered on first use
	tel        *telemetry         // OTLP export (OTEL_EXPORTER_OTLP_*), nil when off
	blame      blame              // the flags behind the SDK's arguments and the API's fields
}

// usageError marks a mistake in how the command was called.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// run executes the command line and returns the exit code.
func run(ctx context.Context, args []string, e env) int {
	a := &app{env: e, cmdPath: "lendgraph", blame: blame{flags: map[string]string{}, words: map[string]string{}}}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	err := root.ExecuteContext(ctx)
	if a.tel != nil {
		if terr := a.tel.end(err); terr != nil {
			a.say("lendgraph: exporting telemetry: %v", terr)
		}
	}
	if err == nil {
		return exitOK
	}
	return a.report(ctx, err)
}

// report prints err for a person (or as JSON with --json) and picks the exit code.
func (a *app) report(ctx context.Context, err error) int {
	code := exitFailure
	msg := strings.TrimPrefix(err.Error(), "lendgraph: ")
	var ue *usageError
	var ie *interruptedError
	var bad *lendgraph.InvalidArgumentError
	var credits *lendgraph.InsufficientCreditsError
	var busy *busyError
	if m, ok := a.blame.explain(err); ok {
		msg = m
	}
	switch {
	case errors.As(err, &busy):
		code = exitBusy
	case !a.started || errors.As(err, &ue) || errors.As(err, &bad):
		code = exitUsage
		msg += "\nRun '" + a.cmdPath + " --help' for usage."
	case errors.As(err, &credits):
		code = exitCredits
		msg = fmt.Sprintf("insufficient credits: balance %s, this needs %s. Top up your balance, then run the command again.",
			number(credits.Balance), number(credits.Cost))
	case errors.As(err, &ie):
		code = exitInterrupted
		msg = dropRepeatedLines(msg, context.Cause(ctx))
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		code = exitInterrupted
		msg = "interrupted: " + dropRepeatedLines(msg, context.Cause(ctx))
	}
	if a.jsonOut {
		_ = json.NewEncoder(a.stderr).Encode(map[string]any{"error": msg, "exitCode": code})
	} else {
		fmt.Fprintln(a.stderr, "lendgraph:", msg)
	}
	return code
}

// dropRepeatedLines drops each line of msg that the lines kept before it
// already say, and the interrupt's cause at the end of any line after the
// first that gives it. Calls running at once that a Ctrl-C stops each end
// with the signal's cause ("interrupt signal received"), and an error
// joining them (errors.Join) would repeat it once a call.
func dropRepeatedLines(msg string, cause error) string {
	var kept []string
	said := false // a kept line gives the cause
	for line := range strings.SplitSeq(msg, "\n") {
		if cause != nil {
			if said {
				line = strings.TrimSuffix(line, ": "+cause.Error())
				if line == cause.Error() {
					continue
				}
			}
			said = said || strings.Contains(line, cause.Error())
		}
		if strings.TrimSpace(line) == "" || slices.Contains(kept, line) {
			continue
		}
		kept = append(kept, line)
	}
	return strings.Join(kept, "\n")
}

// interruptedError ends a command stopped by Ctrl-C, saying what was left
// behind (exit code 130).
type interruptedError struct{ msg string }

func (e *interruptedError) Error() string { return e.msg }

// number formats a credit amount without a needless fraction.
func number(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "lendgraph",
		Short: "The LendGraph command line tool",
		Long: `lendgraph pulls bulk deliveries, exports beyond one delivery as partitioned
datasets, converts delivery files and exports, enriches properties, searches,
lists, counts and fetches records, sends any API request (api), and runs the
fake API as a standalone server.

The API key is read from $LENDGRAPH_API_KEY or from the file named by --api-key-file.
Data goes to stdout, messages to stderr.

Exit codes: 0 success, 1 failure, 2 usage error, 3 insufficient credits,
75 an export run task whose shards another task is submitting (retry it
later), 130 interrupted.`,
		Example: `  export LENDGRAPH_API_KEY="$(cat ~/.lendgraph/key)"
  lendgraph deliver agents --format parquet --filter state=TX -o agents.parquet
  lendgraph export agents --by state,city --out agents/
  lendgraph rows agents.parquet --to csv > agents.csv
  lendgraph enrich --ids property-ids.txt -o owners.ndjson
  lendgraph search smi --json`,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		// Every error before this runs is cobra's: an unknown command, a bad
		// flag, the wrong number of arguments. Those exit with code 2.
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			a.started, a.cmdPath = true, cmd.CommandPath()
			if telemetryWanted(a.getenv) {
				ctx, tel, err := startTelemetry(cmd.Context(), a.getenv, cmd.CommandPath(), func(msg string) { a.say("%s", msg) })
				if err != nil {
					a.say("telemetry is off: %v", err)
					return
				}
				a.tel = tel
				cmd.SetContext(ctx)
			}
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.apiKeyFile, "api-key-file", "", "read the API key from this file (default: $LENDGRAPH_API_KEY)")
	pf.StringVar(&a.baseURL, "base-url", "", "API base URL (default: $LENDGRAPH_BASE_URL, else "+lendgraph.DefaultBaseURL+")")
	pf.BoolVar(&a.jsonOut, "json", false, "machine-readable JSON output")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err.Error()} })
	root.AddCommand(a.deliverCommand(), a.exportCommand(), a.rowsCommand(), a.enrichCommand(), a.searchCommand(),
		a.marketCommand(), a.listCommand(), a.getCommand(), a.countCommand(), a.fieldsCommand(), a.apiCommand(), a.fakeCommand())
	root.SetVersionTemplate("lendgraph {{.Version}}\n")
	return root
}

// version is what --version prints: the tool's module version (as go
// install recorded it; "(devel)" for a build from a checkout), the SDK's
// and Go's.
func version() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	return fmt.Sprintf("%s (SDK %s, %s)", v, lendgraph.Version, runtime.Version())
}

// clientFor builds the API client from the global flags and the environment.
func (a *app) clientFor() (*lendgraph.Client, error) {
	if a.client != nil {
		return a.client, nil
	}
	key := a.getenv(lendgraph.EnvAPIKey)
	if a.apiKeyFile != "" {
		b, err := os.ReadFile(a.apiKeyFile)
		if err != nil {
			return nil, usagef("--api-key-file: %v", err)
		}
		key = strings.TrimSpace(string(b))
	}
	if key == "" {
		return nil, usagef("no API key: set %s or pass --api-key-file", lendgraph.EnvAPIKey)
	}
	base := a.baseURL
	if base == "" {
		base = a.getenv(lendgraph.EnvBaseURL)
	}
	opts := []lendgraph.Option{lendgraph.WithAPIKey(key), lendgraph.WithUserAgent("lendgraph-cli")}
	if base != "" {
		opts = append(opts, lendgraph.WithBaseURL(base))
	}
	if a.tel != nil {
		opts = append(opts, lendgraph.WithObserver(a.tel.obs))
	}
	c, err := lendgraph.NewClient(append(opts, a.clientOpts...)...)
	if err != nil {
		return nil, usagef("%v", err)
	}
	a.client, a.apiKey = c, key
	return c, nil
}

// writeJSONLine writes v as one line of JSON to stdout.
func (a *app) writeJSONLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = a.stdout.Write(b)
	return err
}

// say prints a message for the person running the command on stderr (a
// JSON line {"message": ...} with --json).
func (a *app) say(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if a.jsonOut {
		_ = json.NewEncoder(a.stderr).Encode(map[string]string{"message": msg})
		return
	}
	fmt.Fprintln(a.stderr, msg)
}

// confirm asks a yes/no question on stderr and reads the answer from stdin;
// anything but y or yes (or the end of input) is no.
func (a *app) confirm(question string) bool {
	fmt.Fprintf(a.stderr, "%s [y/N] ", question)
	if a.in == nil {
		a.in = bufio.NewReader(a.stdin)
	}
	line, _ := a.in.ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
