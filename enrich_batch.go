package lendgraph

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// EnrichPlan is a set of property ids split into bulk jobs of at most
// MaxEnrichBulk, ready to submit. Nothing has been sent: show the worst
// case to the user, then call Submit.
type EnrichPlan struct {
	// Batches holds the ids of each job, in order.
	Batches [][]string
	// Properties is the number of ids in all batches.
	Properties int
	// WorstCaseCost is the credits the balance must cover: one a property,
	// as if every one matched (the sum of the jobs' estimatedCost). Billing
	// is per match, so the final charge is usually lower.
	WorstCaseCost int64

	svc *PropertiesService
	req *EnrichBulkRequest
}

// PlanEnrichBulk checks ids and splits them into jobs of at most
// MaxEnrichBulk without sending anything.
func (s *PropertiesService) PlanEnrichBulk(ids []string, req *EnrichBulkRequest) (*EnrichPlan, error) {
	if err := checkEnrichIDs(ids); err != nil {
		return nil, err
	}
	p := &EnrichPlan{Properties: len(ids), WorstCaseCost: int64(len(ids)), svc: s, req: req}
	for start := 0; start < len(ids); start += MaxEnrichBulk {
		p.Batches = append(p.Batches, ids[start:min(start+MaxEnrichBulk, len(ids))])
	}
	return p, nil
}

// EnrichBatch is a set of bulk enrichment jobs submitted together.
type EnrichBatch struct {
	// Jobs are the submitted jobs, in the order of the plan's batches.
	Jobs []*EnrichJob
	// EstimatedCost is the sum of the jobs' worst-case costs as the
	// server estimated them.
	EstimatedCost int64
}

// Submit submits one job per batch, in order. If a submit fails (for
// instance 402 once the balance no longer covers the next batch's worst
// case) the batch holds the jobs submitted so far, which keep running:
// Wait for them or Cancel them. opts apply to every submit.
func (p *EnrichPlan) Submit(ctx context.Context, opts ...Option) (*EnrichBatch, error) {
	if p == nil || p.svc == nil {
		return nil, invalidArg("EnrichPlan", "was not made by PlanEnrichBulk")
	}
	b := &EnrichBatch{}
	for i, ids := range p.Batches {
		j, err := p.svc.EnrichBulk(ctx, ids, p.req, opts...)
		if err != nil {
			return b, fmt.Errorf("lendgraph: submitting enrichment job %d of %d (%d jobs already running): %w", i+1, len(p.Batches), len(b.Jobs), err)
		}
		b.Jobs = append(b.Jobs, j)
		b.EstimatedCost += j.EstimatedCost
	}
	return b, nil
}

// EnrichBulkBatched enriches any number of properties in jobs of at most
// MaxEnrichBulk: it plans (see PlanEnrichBulk) and submits at once. Use
// PlanEnrichBulk to show the worst case before submitting.
func (s *PropertiesService) EnrichBulkBatched(ctx context.Context, ids []string, req *EnrichBulkRequest, opts ...Option) (*EnrichBatch, error) {
	p, err := s.PlanEnrichBulk(ids, req)
	if err != nil {
		return nil, err
	}
	return p.Submit(ctx, opts...)
}

// Wait polls every job of the batch until all are completed, failed or
// cancelled, and returns their last status records in order. WithProgress
// sees one combined record per round: the counts summed over the jobs,
// JobID empty, Status running until every job is finished. Jobs that
// failed or were cancelled give a joined error of *JobError values
// (errors.Is ErrJobFailed / ErrJobCancelled). Cancelling ctx stops waiting
// and leaves the jobs running on the server. As with EnrichJob.Wait, the
// records come back with the error too: each job's last status fetched,
// nil for a job not polled yet.
func (b *EnrichBatch) Wait(ctx context.Context, opts ...EnrichWaitOption) (_ []*EnrichJobStatus, err error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	for i, j := range b.Jobs {
		if j == nil || j.ready() != nil {
			return nil, invalidArg(fmt.Sprintf("Jobs[%d]", i), "is not a usable job; a batch holds the jobs that Submit or EnrichBulkBatched returned (re-attach one by id with PropertiesService.EnrichJob)")
		}
	}
	if len(b.Jobs) == 0 {
		return nil, nil
	}
	plain, progress := splitOptions[EnrichJobStatus](opts)
	first := b.Jobs[0]
	var o *operation
	var cfg *callConfig
	if first.double == nil {
		if ctx, o, err = first.client.begin(ctx, "EnrichBatch.Wait", plain); err != nil {
			return nil, err
		}
		defer func() { o.end(err) }()
		cfg = o.cfg
	} else if cfg, err = waitSettings(nil, "EnrichBatch.Wait", plain); err != nil {
		return nil, err
	}
	last := make([]*EnrichJobStatus, len(b.Jobs))
	fetch := func(ctx context.Context) (*EnrichJobStatus, error) {
		for i, j := range b.Jobs {
			if last[i] != nil && last[i].Status.Terminal() {
				continue
			}
			var st *EnrichJobStatus
			var err error
			if j.double == nil && o != nil && j.client == o.c {
				st = new(EnrichJobStatus)
				err = j.status(ctx, o, st)
			} else {
				st, err = j.Status(ctx, plain...)
			}
			if err != nil {
				return nil, err
			}
			last[i] = st
		}
		return combineStatus(last), nil
	}
	// The combined record's Status says what happened; for the loop, any
	// end is the end.
	done := func(s *EnrichJobStatus) (JobState, string) {
		if s.Status.Terminal() {
			return JobCompleted, ""
		}
		return s.Status, ""
	}
	if _, err := waitFor(ctx, o, cfg, "enrichment", fmt.Sprintf("batch of %d", len(b.Jobs)), progress, fetch, done); err != nil {
		return last, err
	}
	var errs []error
	for i, st := range last {
		if st.Status == JobFailed || st.Status == JobCancelled {
			errs = append(errs, &JobError{Kind: "enrichment", JobID: b.Jobs[i].ID, Status: string(st.Status), Message: st.Error})
		}
	}
	return last, errors.Join(errs...)
}

// combineStatus sums the jobs' records into one.
func combineStatus(sts []*EnrichJobStatus) *EnrichJobStatus {
	c := &EnrichJobStatus{Status: JobCompleted}
	var msgs []string
	for _, s := range sts {
		c.Total += s.Total
		c.Succeeded += s.Succeeded
		c.Failed += s.Failed
		c.FromCache += s.FromCache
		c.ChargedCount += s.ChargedCount
		if !s.StartedAt.IsZero() && (c.StartedAt.IsZero() || s.StartedAt.Before(c.StartedAt)) {
			c.StartedAt = s.StartedAt
		}
		if s.CompletedAt.After(c.CompletedAt) {
			c.CompletedAt = s.CompletedAt
		}
		if s.Error != "" {
			msgs = append(msgs, s.JobID+": "+s.Error)
		}
		switch {
		case !s.Status.Terminal():
			c.Status = JobRunning
		case c.Status == JobRunning:
		case s.Status == JobFailed:
			c.Status = JobFailed
		case s.Status == JobCancelled && c.Status != JobFailed:
			c.Status = JobCancelled
		}
	}
	if c.Status == JobRunning {
		c.CompletedAt = time.Time{}
	}
	c.Error = strings.Join(msgs, "; ")
	return c
}
