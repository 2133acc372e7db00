package lendgraph

import (
	"context"
	"net/url"
	"time"
)

// EnrichJobStatus is the status record of a bulk enrichment job.
type EnrichJobStatus struct {
	JobID        string   `json:"jobId"`
	Status       JobState `json:"status"`
	Total        int64    `json:"total"`
	Succeeded    int64    `json:"succeeded"`
	Failed       int64    `json:"failed"`
	FromCache    int64    `json:"fromCache"`
	ChargedCount int64    `json:"chargedCount"`
	// StartedAt and CompletedAt are zero until the job starts and ends.
	StartedAt   time.Time `json:"startedAt,omitzero"`
	CompletedAt time.Time `json:"completedAt,omitzero"`
	// ResultsURL is present once completed; it is re-signed on every status
	// fetch, so always use the newest one.
	ResultsURL SignedURL `json:"resultsUrl,omitempty"`
	// Error is the failure message of a failed job, when the server sends one.
	Error string `json:"error,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// EnrichJob is a handle on a bulk enrichment job.
type EnrichJob struct {
	job
	// ID is the job's id.
	ID string
}

// EnrichJob re-attaches to a bulk enrichment job by id, for instance after
// a restart.
func (s *PropertiesService) EnrichJob(id string) *EnrichJob {
	return &EnrichJob{ID: id, job: job{client: s.client, kind: "enrichment", path: "/v1/properties/enrich-bulk/" + url.PathEscape(id), id: id}}
}

// Status fetches the job's status record.
func (j *EnrichJob) Status(ctx context.Context) (*EnrichJobStatus, error) {
	var st EnrichJobStatus
	if err := j.status(ctx, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Wait polls the job until it is completed, failed or cancelled. A failed
// job returns an error matching ErrJobFailed (carrying the job's error
// text), a cancelled one ErrJobCancelled. Cancelling ctx stops waiting at
// once; it does not cancel the job on the server (use Cancel).
func (j *EnrichJob) Wait(ctx context.Context, opts ...WaitOption) (*EnrichJobStatus, error) {
	return waitJob(ctx, j.job, opts, func(s *EnrichJobStatus) (JobState, string) { return s.Status, s.Error })
}

// Cancel cancels a queued or running job and returns its settled status.
// A job that already finished gives an error matching ErrJobFinished.
func (j *EnrichJob) Cancel(ctx context.Context) (*EnrichJobStatus, error) {
	var st EnrichJobStatus
	if err := j.cancel(ctx, &st); err != nil {
		return nil, err
	}
	return &st, nil
}
