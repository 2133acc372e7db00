package export

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// CoverageError is a plan whose shards do not add up to the query they
// split: records without a value of the partition field, values the
// listing missed, or a field with several values per record (a record in
// two shards). It is returned before anything is charged.
type CoverageError struct {
	// Field is the partition field whose values did not cover the scope.
	Field string
	// Scope is the shard being split ("state=CA"), empty for the whole query.
	Scope string
	// Total is the number of records the scope matches (the list total).
	Total int64
	// Covered is the sum of the totals of its shards by Field.
	Covered int64
	// Shards is the number of those shards.
	Shards int
	// Unattributed is the number of records the service's chart counts
	// without a value of Field, or -1 when it did not say.
	Unattributed int64
	// Plan is the plan as far as it got, for inspection; running it would
	// lose or duplicate rows.
	Plan *Plan
}

// Error implements the error interface.
func (e *CoverageError) Error() string {
	if e == nil {
		return "export: the shards do not cover the query"
	}
	scope := "the query"
	if e.Scope != "" {
		scope = "shard " + e.Scope
	}
	var b strings.Builder
	fmt.Fprintf(&b, "export: %s matches %d records but its %d shards by %s hold %d", scope, e.Total, e.Shards, e.Field, e.Covered)
	switch {
	case e.Covered < e.Total:
		fmt.Fprintf(&b, ": %d records fall in no shard", e.Total-e.Covered)
		if e.Unattributed > 0 {
			fmt.Fprintf(&b, " (the service counts %d without a %s)", e.Unattributed, e.Field)
		}
		fmt.Fprintf(&b, ". Nothing was charged. Land them too with PlanOptions.IncludeMissing (they go under %s=%s), exclude them with a filter, or partition by a field every record has", e.Field, MissingValue)
	case e.Covered > e.Total:
		fmt.Fprintf(&b, ": %d rows would land in two shards (%s has several values on some records, or the values overlap). Nothing was charged. Partition by a field with one value per record", e.Covered-e.Total, e.Field)
	}
	return b.String()
}

// ShardTooBigError is a shard above the row ceiling of one delivery even
// after every partition field was used. It is returned before anything is
// charged.
type ShardTooBigError struct {
	// Shard names the biggest such shard ("state=CA/city=Los Angeles").
	Shard string
	// Rows is its list total; MaxRows the ceiling of one delivery.
	Rows, MaxRows int64
	// By are the partition fields used.
	By []string
	// Others is how many more shards are above the ceiling.
	Others int
	// Plan is the plan as far as it got, for inspection.
	Plan *Plan
}

// Error implements the error interface.
func (e *ShardTooBigError) Error() string {
	if e == nil {
		return "export: a shard is above the row ceiling"
	}
	s := fmt.Sprintf("export: shard %s matches %d records, above the row ceiling of %d for one delivery, even split by %s",
		e.Shard, e.Rows, e.MaxRows, strings.Join(e.By, ","))
	if e.Others > 0 {
		s += fmt.Sprintf(" (and %d more shards are above it)", e.Others)
	}
	return s + ". Nothing was charged. Add a partition field (--by " + strings.Join(append(append([]string(nil), e.By...), "FIELD"), ",") + ") or narrow the query"
}

// DuplicateError is a dataset in which some ids appear in more than one
// row: shards that overlap, or records that moved from one shard to
// another while the export ran (the data is live). _SUCCESS is not written.
type DuplicateError struct {
	// Count is the number of ids seen more than once.
	Count int64
	// Examples are some of them (at most 10), with the shards they are in.
	Examples []Duplicate
}

// Duplicate is one id found in two rows.
type Duplicate struct {
	ID string `json:"id"`
	// Shards are the shards of its first two rows (the same shard twice
	// when one file holds it twice).
	Shards [2]string `json:"shards"`
}

// Error implements the error interface.
func (e *DuplicateError) Error() string {
	if e == nil {
		return "export: duplicate ids in the dataset"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "export: %d ids appear in more than one row of the dataset", e.Count)
	for i, d := range e.Examples {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s in %s and %s", d.ID, d.Shards[0], d.Shards[1])
	}
	if len(e.Examples) > 0 {
		b.WriteString(")")
	}
	b.WriteString(": the shards overlap, or records moved between shards while the export ran; _SUCCESS was not written")
	return b.String()
}

// ShardFailure is one shard a run could not land.
type ShardFailure struct {
	Shard string
	// JobID is the delivery job, when one was submitted.
	JobID string
	Err   error
}

// RunError lists the shards a run could not land. The others are landed
// and recorded; running the same export again retries these: a failed or
// cancelled job is submitted again, a completed one is downloaded again.
// When a refusal stopped the run's submits (the balance ran out, the
// plan's ceiling is above the service's, the service refuses the request
// itself) the message says what to change first instead. Shards left
// because a submit's answer was lost are not listed: the UncertainError
// beside it lists them.
type RunError struct {
	Failed []ShardFailure
	fix    string // what to change before running again; "" when a run again retries
}

// Error implements the error interface. The shards not submitted because
// an earlier refusal stopped the run's submits are counted, not listed.
func (e *RunError) Error() string {
	if e == nil || len(e.Failed) == 0 {
		return "export: shards failed"
	}
	var b strings.Builder
	var failed []ShardFailure
	for _, f := range e.Failed {
		if !errors.Is(f.Err, errNoSubmit) {
			failed = append(failed, f)
		}
	}
	fmt.Fprintf(&b, "export: %s failed", plural(len(failed), "shard"))
	for i, f := range failed {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more", len(failed)-5)
			break
		}
		fmt.Fprintf(&b, "; %s", f.Shard)
		if f.JobID != "" {
			fmt.Fprintf(&b, " (job %s)", f.JobID)
		}
		fmt.Fprintf(&b, ": %v", f.Err)
	}
	if n := len(e.Failed) - len(failed); n > 0 {
		fmt.Fprintf(&b, "; %s not submitted after that", plural(n, "more shard"))
	}
	if e.fix != "" {
		b.WriteString(". " + e.fix)
	} else {
		b.WriteString("; run the same export again to retry them")
	}
	return b.String()
}

// Unwrap returns the shards' errors, for errors.Is and errors.As.
func (e *RunError) Unwrap() []error {
	if e == nil {
		return nil
	}
	errs := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		errs[i] = f.Err
	}
	return errs
}

// UncertainError lists the shards a run left because an earlier submit's
// answer was lost (a cut connection, a 5xx, a crash while it was in
// flight): the service may hold a job for each, charged when it
// completes, which nobody can find or cancel (the reference lists no
// one's jobs). Submitting again may deliver and charge the shard twice, so
// a run does it only with RunOptions.ResubmitUncertain.
type UncertainError struct {
	Shards []UncertainShard
	// CreditsKnown says whether the shards' Credits are estimated (the
	// plan has a price per row); when not, only their Rows are.
	CreditsKnown bool
}

// Error implements the error interface.
func (e *UncertainError) Error() string {
	if e == nil || len(e.Shards) == 0 {
		return "export: shards whose submit may have charged were left"
	}
	var b strings.Builder
	var rows int64
	var credits float64
	for _, u := range e.Shards {
		rows += u.Rows
		credits += u.Credits
	}
	were := "were"
	if len(e.Shards) == 1 {
		were = "was"
	}
	fmt.Fprintf(&b, "export: %s %s not submitted again because an earlier submit's answer was lost and the service may hold a job for each, charged when it completes (up to %d rows", plural(len(e.Shards), "shard"), were, rows)
	if e.CreditsKnown {
		fmt.Fprintf(&b, ", %s credits", strconv.FormatFloat(credits, 'f', -1, 64))
	}
	b.WriteString(", the shards' planned rows):")
	for i, u := range e.Shards {
		if i == 5 {
			fmt.Fprintf(&b, " and %d more", len(e.Shards)-5)
			break
		}
		fmt.Fprintf(&b, " %s (%d rows)", u.Shard, u.Rows)
	}
	b.WriteString(". Nobody can find those jobs (the service lists no one's jobs); submit the shards again with RunOptions.ResubmitUncertain, accepting that each may be charged twice")
	return b.String()
}

// EmptyError is a plan with no shard: the query matches no record (a
// filter with a typo?). NewPlan returns it unless PlanOptions.AllowEmpty
// is set, and Run refuses such a plan for the same reason, before it
// writes _SUCCESS over a dataset of no files. Nothing was charged.
type EmptyError struct {
	Resource string
}

// Error implements the error interface.
func (e *EmptyError) Error() string {
	if e == nil {
		return "export: the query matches no record"
	}
	return fmt.Sprintf("export: the query matches no %s: nothing to export (a filter value with a typo? values are matched exactly). Nothing was charged; land an empty dataset with PlanOptions.AllowEmpty", e.Resource)
}

// PlanMismatchError is a run (or Plan.Write) into a storage that holds an
// export of a different plan.
type PlanMismatchError struct {
	// Dest is the storage (Storage.String).
	Dest string
	// Want describes the plan there; Got the plan given.
	Want, Got string
	// Submitted says whether anything was submitted from the plan there
	// (a shard claimed or landed). When not, nothing was charged, and
	// Plan.Write replaces it.
	Submitted bool
}

// Error implements the error interface.
func (e *PlanMismatchError) Error() string {
	if e == nil {
		return "export: the destination holds another export"
	}
	s := fmt.Sprintf("export: %s holds an export of another plan (%s; this one is %s)", e.Dest, e.Want, e.Got)
	if e.Submitted {
		return s + ": resume it with the same query, or export into another destination"
	}
	return s + "; nothing was submitted from it, so nothing was charged: write the new plan over it (Plan.Write), or export into another destination"
}

// shardPattern is how the plan's shards are named: "state=VALUE/city=VALUE"
// (a shard that needed fewer fields stops earlier).
func shardPattern(p *Plan) string {
	parts := make([]string, len(p.By))
	for i, f := range p.By {
		parts[i] = f + "=VALUE"
	}
	return strings.Join(parts, "/")
}

// plural is n and noun, with an s unless n is 1: "1 shard", "3 shards".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// errLocked is a lock another process holds.
var errLocked = errors.New("export: locked by another process")
