package lendgraph

import (
	"context"
	"net/url"
	"time"
)

// Format is a bulk delivery file format.
type Format string

// Delivery formats.
const (
	// FormatNDJSON is gzipped newline-delimited JSON (.ndjson.gz).
	FormatNDJSON Format = "ndjson"
	// FormatJSON is one JSON array (.json).
	FormatJSON Format = "json"
	// FormatCSV is RFC 4180 CSV with a header of camelCase field names (.csv).
	FormatCSV Format = "csv"
	// FormatParquet is Apache Parquet with typed columns (.parquet).
	FormatParquet Format = "parquet"
)

// DeliveryStatus is the status record of a bulk delivery job.
type DeliveryStatus struct {
	JobID          string   `json:"jobId"`
	EntityType     string   `json:"entityType"`
	Format         Format   `json:"format"`
	Status         JobState `json:"status"`
	EstimatedTotal int64    `json:"estimatedTotal"`
	Processed      int64    `json:"processed"`
	Bytes          int64    `json:"bytes"`
	// ChargedCount is the billed rows; present once completed.
	ChargedCount *int64 `json:"chargedCount,omitempty"`
	// CreditsCharged is absent until completion, and absent if the billing
	// call did not land.
	CreditsCharged *float64 `json:"creditsCharged,omitempty"`
	// CreditLedgerID is the ledger entry of the debit; absent if billing did not land.
	CreditLedgerID string    `json:"creditLedgerId,omitempty"`
	StartedAt      time.Time `json:"startedAt,omitzero"`
	CompletedAt    time.Time `json:"completedAt,omitzero"`
	// ResultsURL is the signed download link, present once completed and
	// re-signed on every fetch.
	ResultsURL SignedURL `json:"resultsUrl,omitempty"`
	// Error is present only when Status is failed.
	Error string `json:"error,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// DeliveryJob is a handle on a bulk delivery job whose rows are T.
type DeliveryJob[T any] struct {
	job
	// ID is the job's id.
	ID string
}

// DeliveryJob re-attaches to a bulk delivery job of this resource by id.
func (s *ResourceService[T]) DeliveryJob(id string) *DeliveryJob[T] {
	return &DeliveryJob[T]{ID: id, job: job{client: s.client, kind: "delivery",
		path: "/v1/" + s.res.name + "/bulk-delivery/" + url.PathEscape(id), id: id}}
}

// Status fetches the job's status record.
func (j *DeliveryJob[T]) Status(ctx context.Context) (*DeliveryStatus, error) {
	var st DeliveryStatus
	if err := j.status(ctx, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Wait polls the job until it is completed, failed or cancelled; see
// EnrichJob.Wait.
func (j *DeliveryJob[T]) Wait(ctx context.Context, opts ...WaitOption) (*DeliveryStatus, error) {
	return waitJob(ctx, j.job, opts, func(s *DeliveryStatus) (JobState, string) { return s.Status, s.Error })
}

// Cancel cancels a queued or running job and returns its settled status.
func (j *DeliveryJob[T]) Cancel(ctx context.Context) (*DeliveryStatus, error) {
	var st DeliveryStatus
	if err := j.cancel(ctx, &st); err != nil {
		return nil, err
	}
	return &st, nil
}
