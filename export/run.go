package export

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// DefaultConcurrency is the number of shards a run works on at once by
// default: each is one delivery job and, once it completes, one download.
const DefaultConcurrency = 4

// DefaultStaleClaimAfter is RunOptions.StaleClaimAfter's default: twice
// the grace a submit gets after its task is interrupted, and more than any
// submit answer takes.
const DefaultStaleClaimAfter = 2 * time.Minute

// defaultSubmitGrace is how long a submit already sent may go on after
// the run's context ended (see RunOptions.SubmitTimeout).
const defaultSubmitGrace = 30 * time.Second

// RunOptions tune Run.
type RunOptions struct {
	// Concurrency is the number of shards worked on at once: their jobs,
	// polls and downloads (default DefaultConcurrency, at most
	// MaxConcurrency). Submits are bounded apart from it: at most
	// MaxSubmitsInFlight at once, so that a process killed at any moment
	// leaves at most that many shards uncertain. The SDK's client retries
	// 429s and honours Retry-After, and the submits adapt to the service:
	// a 429, a 5xx, a lost or a slow answer halves how many are sent at
	// once, good answers raise it back (AIMD).
	Concurrency int
	// Shards, when set, are the names of the only shards to run (a
	// workflow with one task a shard). The others are left as they are,
	// and the run does not commit: Commit finishes the export once every
	// shard has run.
	Shards []string
	// OnEvent, when set, is told of every change of a shard and of the
	// progress of its job and download. Calls are serialized; keep it
	// quick.
	OnEvent func(Event)
	// StartShard, when set, is called as the run starts working on a
	// shard, with the run's context: the shard's SDK calls (its submit,
	// wait and download) are made with the context it returns, so that a
	// span started in it is their parent (with the SDK's OpenTelemetry
	// adapter on the client, one span a shard under the run's). The run
	// calls end exactly once, when it is done with the shard, with the
	// shard's state and the shard's error (nil when it landed, or was
	// left as it was).
	StartShard func(ctx context.Context, shard string) (context.Context, func(s ShardStatus, err error))
	// WaitOptions tune the polling of each job (lendgraph.WithPollInterval).
	WaitOptions []lendgraph.DeliveryWaitOption
	// SubmitTimeout is the grace a submit already sent gets after ctx
	// ends (default 30s): it goes on, and its job id is recorded, so that
	// an interrupt does not turn a job the service started into one
	// nobody can find. While ctx is live nothing of the run cuts a submit,
	// however slow the answer: a cut submit may still have started a job
	// that is charged when it completes, and the reference has no way to
	// list one's jobs. (A per-attempt timeout of the client itself,
	// http.Client.Timeout or a transport's ResponseHeaderTimeout, is the
	// client's; lendgraph.WithAttemptTimeout never cuts a bulk delivery
	// submit once it was sent.)
	SubmitTimeout time.Duration
	// StaleClaimAfter, in a bucket, is how long another task's claim may
	// go without its job id before it counts as a submit whose answer was
	// lost (the task died between its submit and the record of the job;
	// default DefaultStaleClaimAfter). A younger claim is a task still
	// submitting: the shard is left to it and listed in Result.Busy (Run
	// returns no error for it: check Result.Complete, or Busy), and
	// ResubmitUncertain does not apply to it. A directory needs none: a
	// shard's lock file tells a live process's claim from a dead one's.
	StaleClaimAfter time.Duration
	// ResubmitUncertain submits again the shards whose earlier submit
	// may have started a job (StateSubmitting: its answer was lost, or
	// the process died with the submit in flight). Such a job cannot be
	// found (the reference lists no one's jobs), so submitting again may
	// deliver and charge the shard twice. Without it, a run leaves those
	// shards as they are, lists them in Result.Uncertain and returns an
	// *UncertainError.
	ResubmitUncertain bool
}

// EventKind says what an Event reports.
type EventKind string

// Event kinds.
const (
	EventSubmitted   EventKind = "submitted"    // a job was submitted
	EventReattached  EventKind = "reattached"   // a job of an earlier run was picked up
	EventJobProgress EventKind = "job-progress" // a job's status (Processed, EstimatedTotal)
	EventDownloading EventKind = "downloading"  // the file is downloading (Downloaded, Size)
	EventRedownload  EventKind = "redownload"   // a file is downloaded again (What says why)
	EventLanded      EventKind = "landed"       // the file landed and checked out (Rows)
	EventSkipped     EventKind = "skipped"      // landed earlier and intact
	EventBusy        EventKind = "busy"         // another process works on the shard
	EventFailed      EventKind = "failed"       // the shard failed this run (Err)
	EventUncertain   EventKind = "uncertain"    // left: an earlier submit may have started a job
)

// Event is a change in one shard.
type Event struct {
	Kind  EventKind
	Shard string
	State ShardState
	JobID string
	// What happened, in words: "submitted job dlv_1", "job running",
	// "downloading again from job dlv_1: the file is missing", ...
	What string
	// Processed and EstimatedTotal are the job's rows (while it runs).
	Processed, EstimatedTotal int64
	// Downloaded and Size are the file's bytes (while it downloads; Size
	// is -1 when unknown).
	Downloaded, Size int64
	// Rows are the rows of the landed file.
	Rows int64
	// Err is the shard's error when it failed.
	Err error
}

// Result is what a run did and where the export stands.
type Result struct {
	// Shards is the number of shards in the plan; Landed how many are
	// landed (by this run or an earlier one, or another process), and
	// Pending the others. These three count every shard of the plan;
	// with RunOptions.Shards, the figures below (rows, charges,
	// uncertain) are those of the shards this run worked on.
	Shards, Landed int
	Pending        []string
	// Submitted counts the jobs this run submitted; Reattached the jobs
	// of earlier runs it picked up; Redownloaded the files it landed
	// again from a completed job (no new job, no new charge); Skipped the
	// landed shards whose files were intact.
	Submitted, Reattached, Redownloaded, Skipped int
	// Busy are the shards another process was working on (in a bucket:
	// another task was submitting; see RunOptions.StaleClaimAfter).
	Busy []string
	// PlannedRows is the query's total when planned (with
	// RunOptions.Shards, those shards' planned rows); LandedRows the rows
	// in their landed files. Complete exports report both: the data is
	// live, so they may differ.
	PlannedRows, LandedRows int64
	// ChargedRows and CreditsCharged add up the landed shards' jobs: what
	// the service confirmed it charged for them, by this run and earlier
	// ones. RunChargedRows and RunCreditsCharged count the jobs this run
	// landed alone (a run that resumes a landed export charges nothing).
	ChargedRows       int64
	CreditsCharged    float64
	RunChargedRows    int64
	RunCreditsCharged float64
	// Uncertain are the shards with submits whose answer was lost: each
	// such submit may have started a job this export cannot find, charged
	// when it completes. UncertainRows and UncertainCredits add up their
	// estimates (UncertainShard): on top of ChargedRows and
	// CreditsCharged, what the service may have charged too.
	Uncertain        []UncertainShard
	UncertainRows    int64
	UncertainCredits float64
	// Verification is the check of the whole dataset, when the run
	// committed it (every shard landed, and RunOptions.Shards unset).
	Verification *Verification
	// Complete is true when every shard landed and was verified and no id
	// appeared twice: _SUCCESS was written.
	Complete bool
	// Warnings are things the user should know: a shard submitted again
	// after a submit whose answer was never recorded (the service may hold
	// an extra job), a difference between planned and landed rows.
	Warnings []string
}

// UncertainShard is a shard with submits whose answer was lost (a cut
// connection, a 5xx, a crash while the submit was in flight): the service
// may hold a job for each, which it charges when the job completes, and
// which nobody can find or cancel (the reference lists no one's jobs).
type UncertainShard struct {
	Shard string     `json:"shard"`
	State ShardState `json:"state"`
	// Jobs is the number of such submits: the jobs the service may hold.
	Jobs int `json:"jobs"`
	// Rows estimates what they may charge: Jobs times the shard's planned
	// rows (a job delivers, and is charged for, the rows its query matches
	// when it runs: the planned count unless the data changed since).
	Rows int64 `json:"rows"`
	// Credits is Rows times the plan's CreditsPerRow; zero when the price
	// is unknown.
	Credits float64 `json:"credits,omitempty"`
}

// Run lands the shards of plan in dest, each file as delivered, without
// re-encoding: <key>=<value>[/<key2>=<value2>]/part-00000.<ext>, beside
// the plan (PlanFile), a claim a shard while it is submitted and a record
// a shard once landed. It works on opts.Concurrency shards at once and,
// once every shard has landed (RunOptions.Shards unset), commits the
// dataset as Commit does: _manifest.json, then _SUCCESS.
//
// A shard's file streams from its signed link into dest (a temporary file
// beside its final name in a directory, an upload in a bucket; parquet is
// checked once written, with ranged reads in a bucket) and is hashed and
// decoded on the way: its rows must be the job's charged rows, and each
// must hold the shard's partition values. It appears under its name only
// when complete and checked; then the digest of its ids and its record are
// written.
//
// Running it again resumes: landed shards whose files are intact are
// skipped; a shard whose job completed but whose file is missing or
// damaged is landed again from a freshly signed link (no new job, no new
// charge); a submitted shard is re-attached to its job; only pending,
// failed and cancelled shards are submitted. The intent to submit is
// recorded (a claim, created only when absent) before the submit, the job
// id right after its 202; at most MaxSubmitsInFlight submits are between
// the two at once. When the answer in between is lost (a cut connection, a
// 5xx, a crash with the submit in flight) the service may have started a
// job that nobody can find, charged when it completes: the shard stays
// StateSubmitting, and no later run submits it again unless
// RunOptions.ResubmitUncertain says so; until then the run lists it in
// Result.Uncertain, with the rows and credits at stake, and returns an
// *UncertainError. No timeout of the run cuts a submit while ctx is live;
// when ctx ends, a submit already sent gets RunOptions.SubmitTimeout to
// answer and be recorded. Jobs keep running on the server when ctx ends;
// the next run picks them up. What the run reports is what dest holds: a
// write that fails (a full disk) changes nothing the run reports, a job
// whose id cannot be recorded is cancelled (a cancelled job is not
// charged), and no shard is called uncertain unless its submit was sent.
//
// Before anything is submitted, the plan is checked: one changed since it
// was planned is refused (ErrPlanChanged), as is one of another resource
// than src's, and a dest that holds another plan (*PlanMismatchError). A
// plan with no shard (the query matched nothing) is run only when it was
// made with PlanOptions.AllowEmpty; it then commits a dataset of no file.
//
// Errors: *RunError lists the shards that failed (the others are landed);
// *UncertainError the shards left because a submit may have charged;
// *DuplicateError reports ids found twice; *EmptyError a plan with no
// shard; a lendgraph.InsufficientCreditsError stops further submits; a
// context error when ctx ended. The Result is returned with every error
// but those about the arguments and dest itself.
func Run[T any](ctx context.Context, src Source[T], plan *Plan, dest *Storage, opts *RunOptions) (*Result, error) {
	var o RunOptions
	if opts != nil {
		o = *opts
	}
	if src == nil {
		return nil, invalid("src", "is nil; pass the service of the plan's resource, e.g. c.Agents")
	}
	if err := checkStorage(dest); err != nil {
		return nil, err
	}
	if plan == nil {
		return nil, invalid("plan", "is nil; make one with NewPlan, or read it with ReadPlan")
	}
	if err := plan.check(); err != nil {
		return nil, err
	}
	if got := src.Resource(); got != plan.Resource {
		return nil, invalid("plan", "exports %s, but the source delivers %s: run it with the service of %s", plan.Resource, got, plan.Resource)
	}
	if o.Concurrency < 0 || o.Concurrency > MaxConcurrency {
		return nil, invalid("Concurrency", "is %d; use 1 to %d (MaxConcurrency), or 0 for the default, %d", o.Concurrency, MaxConcurrency, DefaultConcurrency)
	}
	if o.SubmitTimeout < 0 {
		return nil, invalid("SubmitTimeout", "is %s; use a positive grace, or 0 for the default, %s", o.SubmitTimeout, defaultSubmitGrace)
	}
	if len(plan.Shards) == 0 && !plan.AllowEmpty {
		return nil, &EmptyError{Resource: plan.Resource}
	}
	targets := plan.Shards
	if len(o.Shards) > 0 {
		targets = nil
		for _, n := range o.Shards {
			sh, ok := plan.Shard(n)
			if !ok {
				return nil, invalid("Shards", "the plan has no shard %q; its shards are named like %q", n, shardPattern(plan))
			}
			if !slices.ContainsFunc(targets, func(s Shard) bool { return s.Name == n }) {
				targets = append(targets, *sh)
			}
		}
	}
	if _, err := writePlan(ctx, dest, plan, false); err != nil {
		return nil, err
	}
	state := newStateStore(ctx, dest, plan)
	if len(o.Shards) > 0 {
		state.targets = map[string]bool{}
		for _, sh := range targets {
			state.targets[sh.Name] = true
		}
	}
	r := &runner[T]{src: src, plan: plan, st: dest, state: state, opts: o, warned: map[string]bool{}, busy: map[string]bool{}}
	r.opts.Concurrency = cmp.Or(o.Concurrency, DefaultConcurrency)
	r.opts.SubmitTimeout = cmp.Or(o.SubmitTimeout, defaultSubmitGrace)
	r.opts.StaleClaimAfter = cmp.Or(o.StaleClaimAfter, DefaultStaleClaimAfter)
	r.limit = newSubmitLimit(min(r.opts.Concurrency, MaxSubmitsInFlight))
	res := &Result{Shards: len(plan.Shards)}
	for _, sh := range targets {
		res.PlannedRows += sh.Rows
	}
	if len(o.Shards) == 0 {
		res.PlannedRows = plan.Total
	}
	r.res = res

	failed := r.runAll(ctx, targets)
	// The result counts what this run knows even when the storage cannot
	// be read again (a store down at the end): the shards it landed and
	// what they were charged.
	refreshed := state.refresh()
	r.summarize(targets)
	if refreshed != nil {
		return res, refreshed
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("export: interrupted with %d of %d shards landed; run the same export again to resume: %w", res.Landed, res.Shards, context.Cause(ctx))
	}
	var errs []error
	left := r.left(targets)
	// A shard left uncertain is the UncertainError's: a plain run again
	// does not retry it, so the RunError does not list it.
	failed = slices.DeleteFunc(failed, func(f ShardFailure) bool {
		return slices.ContainsFunc(left, func(u UncertainShard) bool { return u.Shard == f.Shard })
	})
	if len(failed) > 0 {
		slices.SortFunc(failed, func(a, b ShardFailure) int { return cmp.Compare(a.Shard, b.Shard) })
		errs = append(errs, &RunError{Failed: failed, fix: r.halt})
		if r.credits != nil {
			errs = append(errs, r.credits)
		}
	}
	if len(left) > 0 {
		errs = append(errs, &UncertainError{Shards: left, CreditsKnown: plan.CreditsPerRow > 0})
	}
	if res.Landed == res.Shards && len(o.Shards) == 0 {
		if err := r.commit(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return res, errors.Join(errs...)
}

// runner is one Run.
type runner[T any] struct {
	src   Source[T]
	plan  *Plan
	st    *Storage
	state *stateStore
	opts  RunOptions
	res   *Result

	limit *submitLimit

	mu        sync.Mutex // guards res, warned, busy, credits, halt, charged and events
	warned    map[string]bool
	busy      map[string]bool // shards another process held
	credits   error           // an InsufficientCreditsError: submit no more
	halt      string          // why submits stopped: what to change before running again
	noSubmits atomic.Bool
}

// runAll works on the targets with bounded concurrency and returns the
// shards that failed.
func (r *runner[T]) runAll(ctx context.Context, targets []Shard) []ShardFailure {
	work := make(chan *Shard)
	var mu sync.Mutex
	var failed []ShardFailure
	var wg sync.WaitGroup
	for range min(r.opts.Concurrency, max(len(targets), 1)) {
		wg.Go(func() {
			for sh := range work {
				if err := r.shard(ctx, sh); err != nil && ctx.Err() == nil {
					mu.Lock()
					failed = append(failed, ShardFailure{Shard: sh.Name, JobID: r.state.get(sh.Name).JobID, Err: err})
					mu.Unlock()
				}
			}
		})
	}
	for i := range targets {
		if ctx.Err() != nil {
			break
		}
		select {
		case work <- &targets[i]:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	return failed
}

// errNoSubmit ends a shard that would need a submit after a submit's
// answer stopped the run's submits (RunError says why).
var errNoSubmit = errors.New("not submitted: an earlier refusal stopped the run's submits")

// stopSubmits stops every further submit of the run; fix says what to
// change before running again (the first one stays).
func (r *runner[T]) stopSubmits(fix string) {
	r.mu.Lock()
	if r.halt == "" {
		r.halt = fix
	}
	r.mu.Unlock()
	r.noSubmits.Store(true)
}

// shard brings one shard to landed.
func (r *runner[T]) shard(ctx context.Context, sh *Shard) (err error) {
	if r.opts.StartShard != nil {
		var end func(ShardStatus, error)
		ctx, end = r.opts.StartShard(ctx, sh.Name)
		defer func() { end(r.state.get(sh.Name), err) }()
	}
	ok, err := r.state.claim(sh.Name)
	if err != nil {
		return err
	}
	if !ok {
		r.leaveBusy(sh, "", "skipped: another process is working on it")
		return nil
	}
	defer r.state.release(sh.Name)
	err = r.work(ctx, sh)
	if errors.Is(err, errClaimed) {
		// Another task claimed the shard between our read and our
		// claim: go on from its claim (its job, or an uncertain submit).
		if _, err := r.state.claim(sh.Name); err != nil {
			return err
		}
		err = r.work(ctx, sh)
	}
	return err
}

// work brings a claimed shard to landed from where it stands.
func (r *runner[T]) work(ctx context.Context, sh *Shard) (err error) {
	cur := r.state.get(sh.Name)
	var job *lendgraph.DeliveryJob[T]
	switch cur.State {
	case StateLanded:
		why := objectMatches(ctx, r.st.b, &cur)
		if why == "" {
			r.count(func(res *Result) { res.Skipped++ })
			r.event(Event{Kind: EventSkipped, Shard: sh.Name, State: StateLanded, JobID: cur.JobID, Rows: cur.Rows, What: "skipped: landed and intact"})
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.count(func(res *Result) { res.Redownloaded++ })
		r.event(Event{Kind: EventRedownload, Shard: sh.Name, State: StateLanded, JobID: cur.JobID, What: "downloading again from job " + cur.JobID + ": " + why})
		job = r.src.DeliveryJob(cur.JobID)
	case StateSubmitted:
		r.count(func(res *Result) { res.Reattached++ })
		r.event(Event{Kind: EventReattached, Shard: sh.Name, State: StateSubmitted, JobID: cur.JobID, What: "re-attached to job " + cur.JobID})
		job = r.src.DeliveryJob(cur.JobID)
	case StateSubmitting:
		if age := time.Since(cur.SubmittedAt); !r.st.b.locks() && !cur.SubmittedAt.IsZero() && age < r.opts.StaleClaimAfter {
			// Another task's claim, too young to be a dead one's: it is
			// submitting, and records its job id once answered.
			r.leaveBusy(sh, StateSubmitting, fmt.Sprintf("skipped: another task claimed it %s ago and is submitting it; run it again later (a claim with no job id after %s counts as a submit whose answer was lost)", age.Round(time.Second), r.opts.StaleClaimAfter))
			return nil
		}
		if !r.opts.ResubmitUncertain {
			r.event(Event{Kind: EventUncertain, Shard: sh.Name, State: StateSubmitting,
				What: "left as it is: an earlier submit's answer was lost, and the service may hold a job for it (charged when it completes); submitting again may charge twice"})
			return nil
		}
		if job, err = r.submit(ctx, sh, true); err != nil {
			return err
		}
	default: // pending, failed, cancelled
		if job, err = r.submit(ctx, sh, false); err != nil {
			return err
		}
	}
	st, err := r.wait(ctx, sh, job)
	if err != nil {
		return err
	}
	return r.land(ctx, sh, job, st)
}

// submit records the intent, submits the shard's delivery and records the
// job id, holding one of the MaxSubmitsInFlight slots from the first
// record to the second. Only ctx ends a submit once sent, and only after
// the grace of RunOptions.SubmitTimeout. again is a submit of a shard
// whose earlier submit's answer was lost (RunOptions.ResubmitUncertain).
func (r *runner[T]) submit(ctx context.Context, sh *Shard, again bool) (*lendgraph.DeliveryJob[T], error) {
	if r.noSubmits.Load() {
		return nil, errNoSubmit
	}
	epoch, err := r.limit.acquire(ctx)
	if err != nil {
		return nil, err
	}
	busy := false
	defer func() { r.limit.release(epoch, busy) }()
	if r.noSubmits.Load() {
		return nil, errNoSubmit
	}
	err = r.state.update(sh.Name, func(s *ShardStatus) {
		if again {
			s.Unanswered = s.lost() // the earlier submit's, now for good
		}
		s.State, s.JobID, s.Error = StateSubmitting, "", ""
		s.SubmittedAt = time.Now().UTC() // a claim's age tells a live task from a dead one
		s.Submits++
		s.Uncertain = s.Uncertain || again
	})
	if err != nil {
		// Nothing was sent: the shard stands as the storage says.
		return nil, fmt.Errorf("not submitted: %w", err)
	}
	if again {
		r.warnShard(sh.Name, "a submit's answer was lost earlier; it was submitted again (ResubmitUncertain), and the service may hold one more job for it (charged when it completes)")
	}
	sctx, cancel := graceContext(ctx, r.opts.SubmitTimeout)
	defer cancel()
	start := time.Now()
	job, err := r.src.Deliver(sctx, &sh.Request)
	busy = overloaded(err, time.Since(start))
	if err != nil {
		return nil, r.submitFailed(sh, err)
	}
	if job.EntityType != "" && job.EntityType != r.plan.Resource {
		// The source is not the plan's resource: stop the job before it
		// delivers (and charges) rows that do not belong here.
		_, _ = job.Cancel(sctx)
		err := fmt.Errorf("the source delivers %s, but the plan exports %s; job %s was cancelled", job.EntityType, r.plan.Resource, job.ID)
		_ = r.state.update(sh.Name, func(s *ShardStatus) { s.State, s.JobID, s.Error = StateCancelled, job.ID, err.Error() })
		return nil, err
	}
	err = r.state.update(sh.Name, func(s *ShardStatus) {
		s.State, s.JobID, s.SubmittedAt = StateSubmitted, job.ID, time.Now().UTC()
	})
	if err != nil {
		if err := r.unrecorded(sctx, sh, job, err); err != nil {
			return nil, err
		}
		// Not cancelled (it completed already): landed from memory, its
		// record, once written, records it.
	}
	r.count(func(res *Result) { res.Submitted++ })
	r.event(Event{Kind: EventSubmitted, Shard: sh.Name, State: StateSubmitted, JobID: job.ID, EstimatedTotal: job.EstimatedTotal, What: "submitted job " + job.ID})
	return job, nil
}

// unrecorded handles a job whose id could not be recorded (a store down,
// a full disk where no room could be taken): a job nobody can find is
// charged when it completes, so it is cancelled at once (a cancelled job is
// not charged) and its claim removed, which leaves the shard as it was
// before the submit. A job that cannot be cancelled (it completed
// already) is landed from memory (nil): its record holds its id. The
// shard stays as the storage says (submitting) until then.
func (r *runner[T]) unrecorded(ctx context.Context, sh *Shard, job *lendgraph.DeliveryJob[T], werr error) error {
	if _, err := job.Cancel(ctx); err != nil {
		r.state.note(sh.Name, fmt.Sprintf("job %s was submitted but its id could not be recorded (%v), and it could not be cancelled (%v): it is landed from memory, and the shard stays uncertain unless its record is written", job.ID, werr, err))
		r.event(Event{Kind: EventSubmitted, Shard: sh.Name, State: StateSubmitting, JobID: job.ID, What: "submitted job " + job.ID + ", not recorded (" + werr.Error() + "): landing it from memory"})
		return nil
	}
	err := fmt.Errorf("job %s was submitted but its id could not be recorded (%w); it was cancelled (a cancelled job is not charged)", job.ID, werr)
	if uerr := r.state.update(sh.Name, func(s *ShardStatus) { s.State, s.Error = StateCancelled, err.Error() }); uerr != nil {
		err = fmt.Errorf("%w; its claim could not be removed either (%w)", err, uerr)
	}
	r.event(Event{Kind: EventFailed, Shard: sh.Name, State: r.state.get(sh.Name).State, JobID: job.ID, What: "submitted, not recorded: cancelled", Err: err})
	return err
}

// submitFailed records a submit that returned an error. When the service
// may have started a job anyway (no answer, a 5xx other than 502, an
// answer that did not decode) the shard stays submitting, which a later
// run submits again only with RunOptions.ResubmitUncertain.
//
// A refusal that every other shard would get alike stops the run's
// submits at once: a 402 (the balance), a ceiling below the plan's (the
// shard was planned within the plan's ceiling but is above the
// service's), and a 4xx about the request itself (a field the resource
// does not have, a bad key) rather than the shard.
func (r *runner[T]) submitFailed(sh *Shard, err error) error {
	var (
		ice *lendgraph.InsufficientCreditsError
		mr  *lendgraph.MaxRowsError
	)
	ceiling := r.ceilingAbove(sh, err)
	switch {
	case errors.As(err, &ice):
		r.mu.Lock()
		if r.credits == nil {
			r.credits = err
		}
		r.mu.Unlock()
		r.stopSubmits("The balance ran out: add credits, then run the same export again to submit the rest")
	case ceiling > 0:
		n := ceiling
		err = fmt.Errorf("%w (the shard was planned at %d rows, within the plan's ceiling of %d, but the service's ceiling is %d)", err, sh.Rows, r.plan.MaxRows, n)
		from := "PlanOptions.MaxRows"
		if r.plan.MaxRowsFrom != "user" {
			from = "learned from the service's " + r.plan.MaxRowsFrom + " when planned"
		}
		r.stopSubmits(fmt.Sprintf("The plan's row ceiling of %d (%s) is above the service's ceiling of %d: every shard above %d rows is refused alike, so no more were submitted; plan the export again with a ceiling of at most %d (PlanOptions.MaxRows; 0 asks the service), into a new directory",
			r.plan.MaxRows, from, n, n, n))
	case errors.As(err, &mr):
		err = fmt.Errorf("%w (the shard grew above the ceiling since it was planned: plan the export again into a new directory)", err)
	default:
		if fix := refusesRequest(err); fix != "" {
			r.stopSubmits(fix)
		}
	}
	var uerr error
	if outcomeUnknown(err) {
		// The claim says submitting already: so it stays.
		r.state.note(sh.Name, err.Error()+" (the service may have started a job, charged when it completes; the shard is submitted again only when you accept that it may be charged twice)")
	} else {
		uerr = r.state.update(sh.Name, func(s *ShardStatus) { s.State, s.Error = StateFailed, err.Error() })
	}
	r.event(Event{Kind: EventFailed, Shard: sh.Name, State: r.state.get(sh.Name).State, What: "submit failed", Err: err})
	return errors.Join(err, uerr)
}

// ceilingAbove is the service's row ceiling when a submit's refusal says
// the plan's ceiling is above it: the shard's planned rows were within the
// plan's ceiling but are above the service's. Zero otherwise (the shard
// grew since it was planned, or another refusal).
func (r *runner[T]) ceilingAbove(sh *Shard, err error) int64 {
	var n int64
	var mr *lendgraph.MaxRowsError
	var ent *lendgraph.EntitlementError
	switch {
	case errors.As(err, &mr):
		n = mr.MaxRows
	case errors.As(err, &ent):
		n = ent.MaxRows
	}
	if n > 0 && n < r.plan.MaxRows && sh.Rows > n && sh.Rows <= r.plan.MaxRows {
		return n
	}
	return 0
}

// refusesRequest says what to change when a submit's refusal is about the
// export's request itself, which every shard would get alike, and "" when
// it is about this shard or may pass on a retry: a 4xx other than a
// row-ceiling refusal (400 delivery_exceeds_max_rows, 403
// entitlement_missing), 402, 408 and 429.
func refusesRequest(err error) string {
	var (
		inv *lendgraph.InvalidArgumentError
		api *lendgraph.APIError
		mr  *lendgraph.MaxRowsError
		ent *lendgraph.EntitlementError
	)
	if errors.As(err, &inv) {
		return "The request is invalid for every shard alike, so no more were submitted; change what it names and plan the export again into a new directory"
	}
	if !errors.As(err, &api) || errors.As(err, &mr) || errors.As(err, &ent) {
		return ""
	}
	switch s := api.StatusCode; {
	case s < 400 || s >= 500, s == http.StatusPaymentRequired, s == http.StatusRequestTimeout, s == http.StatusTooManyRequests:
		return ""
	case s == http.StatusBadRequest || s == http.StatusUnprocessableEntity:
		return "The service refused the export's request itself, not one shard: every shard would be refused alike, so no more were submitted; change what it names (a field, filter, sort or format) and plan the export again into a new directory. Delivery fields are checked by the service only at submit"
	default:
		return fmt.Sprintf("The service refused the submit with %d %s, which is not about one shard: every shard would be refused alike, so no more were submitted; fix what it names (the API key, its permissions), then run the same export again", s, http.StatusText(s))
	}
}

// graceContext is ctx for a submit: it is not cancelled when ctx is, but
// grace later, so that a submit already sent can still be answered and
// recorded. The returned cancel releases it.
func graceContext(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	sctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	var (
		mu    sync.Mutex
		timer *time.Timer
		done  bool
	)
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			timer = time.AfterFunc(grace, func() {
				cancel(fmt.Errorf("%w, and the submit was not answered within the grace of %s after it", context.Cause(ctx), grace))
			})
		}
	})
	return sctx, func() {
		stop()
		mu.Lock()
		done = true
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel(context.Canceled)
	}
}

// outcomeUnknown reports whether a failed submit may still have started a
// job: anything but an HTTP answer that refuses it (4xx, or the 502 the
// reference calls a launch failure) and the SDK's own argument checks.
func outcomeUnknown(err error) bool {
	var inv *lendgraph.InvalidArgumentError
	if errors.As(err, &inv) {
		return false
	}
	var api *lendgraph.APIError
	if errors.As(err, &api) {
		return api.StatusCode >= 500 && api.StatusCode != http.StatusBadGateway
	}
	return true
}

// wait polls the job until it ends and records a failed or cancelled one.
func (r *runner[T]) wait(ctx context.Context, sh *Shard, job *lendgraph.DeliveryJob[T]) (*lendgraph.DeliveryStatus, error) {
	progress := lendgraph.WithProgress(func(s *lendgraph.DeliveryStatus) {
		r.event(Event{Kind: EventJobProgress, Shard: sh.Name, State: StateSubmitted, JobID: job.ID, What: "job " + string(s.Status),
			Processed: s.Processed, EstimatedTotal: s.EstimatedTotal})
	})
	st, err := job.Wait(ctx, append(slices.Clone(r.opts.WaitOptions), progress)...)
	if err == nil {
		return st, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var je *lendgraph.JobError
	state := ShardState("")
	switch {
	case errors.As(err, &je) && errors.Is(err, lendgraph.ErrJobCancelled):
		state = StateCancelled
	case errors.As(err, &je):
		state = StateFailed
	case errors.Is(err, lendgraph.ErrNotFound):
		state = StateFailed
		err = fmt.Errorf("%w (the service no longer knows job %s: past its 30-day retention?)", err, job.ID)
	}
	var uerr error
	if state == "" {
		r.state.note(sh.Name, err.Error()) // the job may still complete: its claim stays
	} else {
		uerr = r.state.update(sh.Name, func(s *ShardStatus) { s.State, s.Error = state, err.Error() })
	}
	r.event(Event{Kind: EventFailed, Shard: sh.Name, State: r.state.get(sh.Name).State, JobID: job.ID, What: "job did not complete", Err: err})
	return nil, errors.Join(err, uerr)
}

// count changes the result's counters.
func (r *runner[T]) count(fn func(*Result)) {
	r.mu.Lock()
	fn(r.res)
	r.mu.Unlock()
}

// warnShard adds a warning about a shard, once.
func (r *runner[T]) warnShard(name, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.warned[name] {
		r.warned[name] = true
		r.res.Warnings = append(r.res.Warnings, "shard "+name+": "+msg)
	}
}

// event tells OnEvent, one call at a time.
func (r *runner[T]) event(e Event) {
	if r.opts.OnEvent == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.opts.OnEvent(e)
}

// landedNow counts a job this run landed in what the run charged.
func (r *runner[T]) landedNow(name string, st *lendgraph.DeliveryStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st.ChargedCount != nil {
		r.res.RunChargedRows += *st.ChargedCount
	}
	if st.CreditsCharged != nil {
		r.res.RunCreditsCharged += *st.CreditsCharged
	}
}

// summarize fills the result from the state the storage holds: Landed and
// Pending over every shard, the rest over the targets.
func (r *runner[T]) summarize(targets []Shard) {
	m := r.state.snapshot()
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.res
	res.Landed, res.Pending, res.LandedRows, res.ChargedRows, res.CreditsCharged = 0, nil, 0, 0, 0
	res.Uncertain, res.UncertainRows, res.UncertainCredits = nil, 0, 0
	for _, s := range m.Shards {
		if s.State != StateLanded {
			res.Pending = append(res.Pending, s.Name)
		} else {
			res.Landed++
		}
		if !slices.ContainsFunc(targets, func(t Shard) bool { return t.Name == s.Name }) {
			continue
		}
		if u, ok := r.uncertain(&s); ok {
			res.Uncertain = append(res.Uncertain, u)
			res.UncertainRows += u.Rows
			res.UncertainCredits += u.Credits
		}
		if s.State != StateLanded {
			continue
		}
		res.LandedRows += s.Rows
		if s.ChargedCount != nil {
			res.ChargedRows += *s.ChargedCount
		}
		if s.CreditsCharged != nil {
			res.CreditsCharged += *s.CreditsCharged
		}
		if s.Uncertain && !r.warned[s.Name] && s.lost() > 0 {
			r.warned[s.Name] = true
			res.Warnings = append(res.Warnings, fmt.Sprintf("shard %s: one of its submits was never answered; the service may hold one more job for it (charged when it completes)", s.Name))
		}
	}
}

// leaveBusy leaves a shard another process or task is working on to it:
// listed in Result.Busy (and so never as uncertain), and told as EventBusy.
func (r *runner[T]) leaveBusy(sh *Shard, state ShardState, what string) {
	r.count(func(res *Result) {
		res.Busy = append(res.Busy, sh.Name)
		r.busy[sh.Name] = true
	})
	r.event(Event{Kind: EventBusy, Shard: sh.Name, State: state, What: what})
}

// uncertain describes a shard with submits whose answer was lost, false
// when it has none (or another process holds it: its submit may simply be
// in flight).
func (r *runner[T]) uncertain(s *ShardStatus) (UncertainShard, bool) {
	n := s.lost()
	if n == 0 || r.busy[s.Name] {
		return UncertainShard{}, false
	}
	u := UncertainShard{Shard: s.Name, State: s.State, Jobs: n, Rows: r.plan.lostRows(s)}
	u.Credits = float64(u.Rows) * r.plan.CreditsPerRow
	return u, true
}

// left lists the targets still waiting on a submit whose answer was lost.
func (r *runner[T]) left(targets []Shard) []UncertainShard {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []UncertainShard
	for _, u := range r.res.Uncertain {
		if u.State == StateSubmitting && slices.ContainsFunc(targets, func(s Shard) bool { return s.Name == u.Shard }) {
			out = append(out, u)
		}
	}
	return out
}
