package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// TaskQueue is the queue the worker polls and the workflow is started on.
const TaskQueue = "lendgraph-export"

// ExportInput names an export whose plan is already in its destination
// (lendgraph export plan ... --out URL, or Plan.Write).
type ExportInput struct {
	// Dest is the destination: an object store URL (s3://bucket/prefix),
	// or a directory every worker reaches (a shared file system).
	Dest string
	// Parallel is how many shards run at once (default 8).
	Parallel int
}

// ExportResult is what the workflow reports once the dataset is committed.
type ExportResult struct {
	Shards         int
	Rows           int64
	CreditsCharged float64
}

// ExportWorkflow runs one activity a shard of the plan in Dest, at most
// Parallel at once, each retried by Temporal when it fails (a retry of a
// shard continues its job: the claim and the job id are in the store, so
// it is never charged twice), then commits the dataset.
func ExportWorkflow(ctx workflow.Context, in ExportInput) (*ExportResult, error) {
	parallel := in.Parallel
	if parallel <= 0 {
		parallel = 8
	}
	var a *Activities // the methods' names, for ExecuteActivity
	quick := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	var shards []string
	if err := workflow.ExecuteActivity(quick, a.Shards, in.Dest).Get(ctx, &shards); err != nil {
		return nil, err
	}

	// A shard's job may take long to be delivered: the activity heartbeats
	// while it works, so a dead worker is noticed within HeartbeatTimeout
	// and the shard moves to another.
	shardCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Hour,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			MaximumAttempts:        10,
			NonRetryableErrorTypes: []string{errUncertain, errRefused},
		},
	})
	running := make([]workflow.Future, 0, parallel)
	var firstErr error
	wait := func(f workflow.Future) {
		if err := f.Get(ctx, nil); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for _, name := range shards {
		if len(running) == parallel {
			wait(running[0])
			running = running[1:]
		}
		running = append(running, workflow.ExecuteActivity(shardCtx, a.RunShard, in.Dest, name))
	}
	for _, f := range running {
		wait(f)
	}
	if firstErr != nil {
		return nil, firstErr
	}

	var res ExportResult
	if err := workflow.ExecuteActivity(quick, a.Commit, in.Dest).Get(ctx, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// The error types a retry cannot fix.
const (
	errUncertain = "UncertainError" // a submit whose answer was lost: a person decides
	errRefused   = "RequestRefused" // a 4xx every attempt would get alike
)

// Activities are the steps of ExportWorkflow. Client is the LendGraph
// client the worker calls the API with.
type Activities struct {
	Client *lendgraph.Client
}

// Shards returns the names of the plan's shards.
func (a *Activities) Shards(ctx context.Context, dest string) ([]string, error) {
	st, err := export.Open(ctx, dest)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	plan, err := export.ReadPlan(ctx, st)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(plan.Shards))
	for i, sh := range plan.Shards {
		names[i] = sh.Name
	}
	return names, nil
}

// RunShard lands one shard: it claims it, submits its delivery (or
// continues the job an earlier attempt recorded), streams the file into
// the store and writes the shard's record.
func (a *Activities) RunShard(ctx context.Context, dest, shard string) error {
	st, err := export.Open(ctx, dest)
	if err != nil {
		return err
	}
	defer st.Close()
	plan, err := export.ReadPlan(ctx, st)
	if err != nil {
		return err
	}
	// Heartbeat on every event of the shard and at least every 10 s in
	// between (a job being computed may report nothing for a while).
	beat := make(chan struct{})
	done := make(chan struct{})
	defer func() { close(beat); <-done }()
	go func() {
		defer close(done)
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-beat:
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, shard)
			}
		}
	}()
	opts := &export.RunOptions{Shards: []string{shard}, Concurrency: 1,
		OnEvent: func(e export.Event) { activity.RecordHeartbeat(ctx, string(e.Kind)) }}
	_, err = runPlan(ctx, a.Client, plan, st, opts)
	return classify(err)
}

// classify marks the errors a retry of the activity cannot fix as
// non-retryable: a shard whose earlier submit may have started a job (a
// person decides: lendgraph export run --resubmit-uncertain), a request
// the service refuses as such (a 4xx other than 408 and 429: no credits,
// no entitlement, a bad field), and a bad argument.
func classify(err error) error {
	var unc *export.UncertainError
	var api *lendgraph.APIError
	var arg *lendgraph.InvalidArgumentError
	switch {
	case errors.As(err, &unc):
		return temporal.NewNonRetryableApplicationError(err.Error(), errUncertain, err)
	case errors.As(err, &api) && api.StatusCode >= 400 && api.StatusCode < 500 && api.StatusCode != 408 && api.StatusCode != 429,
		errors.As(err, &arg):
		return temporal.NewNonRetryableApplicationError(err.Error(), errRefused, err)
	}
	return err
}

// Commit checks every shard's record and the ids across the dataset, then
// writes _manifest.json and _SUCCESS.
func (a *Activities) Commit(ctx context.Context, dest string) (*ExportResult, error) {
	st, err := export.Open(ctx, dest)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	m, err := export.Commit(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	res := &ExportResult{Shards: len(m.Shards)}
	for _, s := range m.Shards {
		res.Rows += s.Rows
		if s.CreditsCharged != nil {
			res.CreditsCharged += *s.CreditsCharged
		}
	}
	return res, nil
}

// runPlan runs plan with the client's service for its resource.
func runPlan(ctx context.Context, c *lendgraph.Client, plan *export.Plan, st *export.Storage, opts *export.RunOptions) (*export.Result, error) {
	switch plan.Resource {
	case "agents":
		return export.Run(ctx, c.Agents, plan, st, opts)
	case "originators":
		return export.Run(ctx, c.Originators, plan, st, opts)
	case "companies":
		return export.Run(ctx, c.Companies, plan, st, opts)
	case "loans":
		return export.Run(ctx, c.Loans, plan, st, opts)
	case "properties":
		return export.Run(ctx, c.Properties, plan, st, opts)
	case "branches":
		return export.Run(ctx, c.Branches, plan, st, opts)
	}
	return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("plan of %q: this worker exports agents, originators, companies, loans, properties and branches", plan.Resource), errRefused, nil)
}
