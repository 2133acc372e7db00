package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// blame ties the SDK's argument names and the API's field paths to the
// flags a command took them from, and to the words the user typed, so
// that an error says what to change on the command line ("--limit 1000:
// 1000 is outside 1..50"), never an SDK field ("invalid Limit").
type blame struct {
	flags map[string]string // SDK argument ("Limit") → its flag or argument ("--limit")
	words map[string]string // SDK argument → the user's words ("--limit 1000"), when given
	api   []apiBlame        // API field paths a 400 may name, most specific first
}

// apiBlame is an API field path ("flatFilters.state", "fields[0]",
// "period") and the words the user gave it with.
type apiBlame struct {
	path  *regexp.Regexp
	words string
}

// blameFlags records, for each SDK argument, the flag of cmd it comes
// from, and the user's words when the flag was given.
func (a *app) blameFlags(cmd *cobra.Command, sdkToFlag map[string]string) {
	for sdk, name := range sdkToFlag {
		f := cmd.Flags().Lookup(name)
		if f == nil {
			continue
		}
		a.blame.flags[sdk] = "--" + name
		if f.Changed {
			a.blame.words[sdk] = "--" + name + " " + flagWords(f)
		}
	}
}

// blameArg records that SDK argument sdk is the command's argument named
// name (QUERY, ID), given as value.
func (a *app) blameArg(sdk, name, value string) {
	a.blame.flags[sdk] = name
	a.blame.words[sdk] = fmt.Sprintf("%s %q", name, value)
}

// blameAPI records that the API field path (as a 400's message names it:
// "flatFilters.state", "fields[0]", "period") comes from the user's words.
func (a *app) blameAPI(path, words string) {
	re := regexp.MustCompile(`(^|[^A-Za-z0-9_.\[])` + regexp.QuoteMeta(path) + `($|[^A-Za-z0-9_])`)
	a.blame.api = append(a.blame.api, apiBlame{re, words})
}

// flagWords is a flag's value as the user wrote it: a list's items joined
// with commas, a string as is.
func flagWords(f *pflag.Flag) string {
	if s, ok := f.Value.(pflag.SliceValue); ok {
		return strings.Join(s.GetSlice(), ",")
	}
	return f.Value.String()
}

// explain rewrites err in the command line's terms when it comes from a
// flag: an invalid SDK argument, a 400 naming an API field, a delivery
// over the row ceiling. ok is false when nothing ties err to a flag.
func (b *blame) explain(err error) (msg string, ok bool) {
	var bad *lendgraph.InvalidArgumentError
	var ceiling *lendgraph.MaxRowsError
	var api *lendgraph.APIError
	switch {
	case errors.As(err, &bad):
		words := b.words[bad.Arg]
		if words == "" {
			words = b.flags[bad.Arg]
		}
		if words == "" {
			return "", false
		}
		return words + ": " + b.inFlags(bad.Problem), true
	case errors.As(err, &ceiling) && b.flags["Limit"] != "":
		s := fmt.Sprintf("about %d rows match, over this organization's ceiling of %d rows a delivery: narrow the filters, or pass --limit %d (or less)",
			ceiling.EstimatedTotal, ceiling.MaxRows, ceiling.MaxRows)
		if w := b.words["Limit"]; w != "" {
			s = w + ": " + s
		}
		return s, true
	case errors.As(err, &api) && api.StatusCode == 400:
		for _, p := range b.api {
			if p.path.MatchString(api.Message) {
				return p.words + ": " + strings.TrimPrefix(err.Error(), "lendgraph: "), true
			}
		}
	}
	return "", false
}

// inFlags replaces the SDK argument names a problem mentions ("set State
// too") with their flags ("set --state too").
func (b *blame) inFlags(problem string) string {
	for sdk, flag := range b.flags {
		re := regexp.MustCompile(`\b` + regexp.QuoteMeta(sdk) + `\b`)
		problem = re.ReplaceAllString(problem, flag)
	}
	return problem
}

// blame records where each part of the list request came from: the API
// names the part it refuses ("flatFilters.stat", "sort[1]", "period").
func (q *queryFlags) blame(a *app) {
	for _, f := range q.filters {
		k, _, _ := strings.Cut(f, "=")
		a.blameAPI("flatFilters."+k, "--filter "+f)
	}
	if q.where != "" {
		a.blameAPI("advancedFilters", "--where "+strconv.Quote(q.where))
	}
	for i, s := range q.sorts {
		a.blameAPI(fmt.Sprintf("sort[%d]", i), "--sort "+s)
	}
	if q.period != "" {
		a.blameAPI("period", "--period "+q.period)
	}
}
