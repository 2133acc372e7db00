package lendgraph

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// IntegrationsAPI is what c.Integrations offers.
type IntegrationsAPI interface {
	PushCRM(ctx context.Context, req *PushCRMRequest, opts ...Option) (*PushCRMResult, error)
	PushCRMBatched(ctx context.Context, req *PushCRMRequest, opts ...Option) (*PushCRMResult, error)
	CRMStatus(ctx context.Context, opts ...Option) (*CRMStatus, error)
}

var _ IntegrationsAPI = (*IntegrationsService)(nil)

// IntegrationsService sends records to a connected external CRM.
type IntegrationsService struct {
	client *Client
}

// MaxPushIDs is the most ids one push request takes.
const MaxPushIDs = 100

// CRMEntity is the kind of record pushed; "agent" is the one shown.
type CRMEntity string

// CRMEntityAgent pushes agents.
const CRMEntityAgent CRMEntity = "agent"

// CRMObject is the external CRM object written; "contact" is the one shown.
type CRMObject string

// CRMObjectContact writes contacts.
const CRMObjectContact CRMObject = "contact"

// PushStatus is the outcome of one pushed id. "created" is shown by the
// reference; the others are named after the summary's counters. Unknown
// values are kept as sent.
type PushStatus string

// Push outcomes.
const (
	PushCreated PushStatus = "created"
	PushUpdated PushStatus = "updated"
	PushSkipped PushStatus = "skipped"
	PushFailed  PushStatus = "failed"
)

// PushReason explains an outcome; "not_found" is shown, others are kept as sent.
type PushReason string

// PushNotFound is the reason given when the id matches no record of the entity.
const PushNotFound PushReason = "not_found"

// PushCRMRequest is a push of records to the external CRM.
type PushCRMRequest struct {
	Entity CRMEntity `json:"entity"`
	// IDs are the records to push: 1 to 100 for PushCRM, any number for
	// PushCRMBatched.
	IDs    []string  `json:"ids"`
	Object CRMObject `json:"object"`
	// DryRun shows what would be written, writing and charging nothing.
	DryRun bool `json:"dryRun"`
}

// PushCRMResult is the outcome of a push. PushCRMBatched merges the answers of
// its batches into one.
type PushCRMResult struct {
	Billing        CRMBilling       `json:"billing"`
	DryRun         bool             `json:"dryRun"`
	Entity         CRMEntity        `json:"entity"`
	Object         CRMObject        `json:"object"`
	PortalID       string           `json:"portalId"`
	PortalRecorded bool             `json:"portalRecorded"`
	Results        []CRMPushOutcome `json:"results"`
	Summary        CRMPushSummary   `json:"summary"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// CRMBilling is what a push cost.
type CRMBilling struct {
	Charged float64 `json:"charged"`
	Note    string  `json:"note"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// CRMPushOutcome is the outcome of one id.
type CRMPushOutcome struct {
	ID          string     `json:"id"`
	CRMRecordID string     `json:"crmRecordId"`
	Message     string     `json:"message"`
	Preserved   []string   `json:"preserved"`
	Reason      PushReason `json:"reason"`
	Status      PushStatus `json:"status"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// CRMPushSummary counts the outcomes.
type CRMPushSummary struct {
	Requested int64 `json:"requested"`
	Created   int64 `json:"created"`
	Updated   int64 `json:"updated"`
	Skipped   int64 `json:"skipped"`
	Failed    int64 `json:"failed"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

func (r *PushCRMRequest) validate(maxIDs int) error {
	if r == nil {
		return invalidArg("req", "is nil")
	}
	if r.Entity == "" {
		return invalidArg("Entity", "is required, e.g. lendgraph.CRMEntityAgent")
	}
	if r.Object == "" {
		return invalidArg("Object", "is required, e.g. lendgraph.CRMObjectContact")
	}
	if len(r.IDs) == 0 {
		return invalidArg("IDs", "name at least one record to push")
	}
	if maxIDs > 0 && len(r.IDs) > maxIDs {
		return invalidArg("IDs", "%d ids; one push takes at most %d: use PushCRMBatched to send larger sets in batches", len(r.IDs), maxIDs)
	}
	seen := make(map[string]int, len(r.IDs))
	for i, id := range r.IDs {
		if id == "" {
			return invalidArg(fmt.Sprintf("IDs[%d]", i), "must not be empty")
		}
		// Each id is pushed and charged as sent: a repeat would write the
		// same record again and charge for it again.
		if j, dup := seen[id]; dup {
			return invalidArg(fmt.Sprintf("IDs[%d]", i), "%q repeats IDs[%d]; each push charges per id sent, so send each record once", id, j)
		}
		seen[id] = i
	}
	return nil
}

// PushCRM sends up to 100 records to the connected CRM
// (POST /v1/integrations/crm/push). Existing CRM records are matched and
// updated, not duplicated; every id gets an outcome. Each record written is
// charged and there is no undo, so the push is never repeated once the
// server may have acted (only a 429 or a connection that never opened is
// retried). Set DryRun first to see what would be written. A short balance
// gives *InsufficientCreditsError (402, Balance and Cost); a refused request
// may give *ValidationError with Code and Details.
func (s *IntegrationsService) PushCRM(ctx context.Context, req *PushCRMRequest, opts ...Option) (_ *PushCRMResult, err error) {
	if err := req.validate(MaxPushIDs); err != nil {
		return nil, err
	}
	ctx, o, err := s.client.begin(ctx, "Integrations.PushCRM", opts)
	if err != nil {
		return nil, err
	}
	defer func() { o.end(err) }()
	return s.push(ctx, o, req)
}

// push sends one batch in operation o.
func (s *IntegrationsService) push(ctx context.Context, o *operation, req *PushCRMRequest) (*PushCRMResult, error) {
	res, err := sendFor[PushCRMResult](ctx, o, request{method: http.MethodPost, path: "/v1/integrations/crm/push", body: req, kind: retry.Unrepeatable})
	if err != nil {
		return nil, err
	}
	o.obs.chargedMore(res.Billing.Charged)
	return res, nil
}

// outcomeKnown reports whether a failed push certainly wrote nothing (see
// ErrOutcomeUnknown): a client error (402, 400, 401, 403, 404, 429...), a
// connection that never opened, a context that ended before sending. A
// 5xx, a cut connection, a timeout or an unreadable 2xx leave the outcome
// unknown.
func outcomeKnown(err error) bool { return !errors.Is(err, ErrOutcomeUnknown) }

// PushCRMBatched sends any number of records in batches of 100, in order, and
// merges the outcomes (results, summary, charged credits). It stops at the
// first failed batch and returns the merged outcome so far together with a
// *PushIncompleteError: at a 402 the batches already written are reported
// and the rest not sent; a batch whose outcome is unknown (a 5xx or a cut
// connection) is reported as Unknown and never re-sent.
func (s *IntegrationsService) PushCRMBatched(ctx context.Context, req *PushCRMRequest, opts ...Option) (_ *PushCRMResult, err error) {
	if err := req.validate(0); err != nil {
		return nil, err
	}
	ctx, o, err := s.client.begin(ctx, "Integrations.PushCRMBatched", opts)
	if err != nil {
		return nil, err
	}
	defer func() { o.end(err) }()
	merged := &PushCRMResult{Entity: req.Entity, Object: req.Object, DryRun: req.DryRun}
	for start := 0; start < len(req.IDs); start += MaxPushIDs {
		end := min(start+MaxPushIDs, len(req.IDs))
		batch := *req
		batch.IDs = req.IDs[start:end]
		res, err := s.push(ctx, o, &batch)
		if err != nil {
			pe := &PushIncompleteError{Done: merged, NotSent: req.IDs[end:], Err: err}
			if outcomeKnown(err) {
				pe.NotSent = req.IDs[start:]
			} else {
				pe.Unknown = batch.IDs
			}
			return merged, pe
		}
		merged.merge(res, start == 0)
	}
	return merged, nil
}

// merge adds one batch's answer to m.
func (m *PushCRMResult) merge(r *PushCRMResult, first bool) {
	if first {
		results, summary := m.Results, m.Summary
		*m = *r
		m.Results, m.Summary = results, summary
		m.Billing.Charged = 0
	}
	m.Results = append(m.Results, r.Results...)
	m.Summary.Requested += r.Summary.Requested
	m.Summary.Created += r.Summary.Created
	m.Summary.Updated += r.Summary.Updated
	m.Summary.Skipped += r.Summary.Skipped
	m.Summary.Failed += r.Summary.Failed
	m.Billing.Charged += r.Billing.Charged
	m.PortalRecorded = m.PortalRecorded || r.PortalRecorded
}

// CRMStatus says whether records can be sent to the external CRM. The
// reference shows neither its path nor its field names: the typed fields
// are the SDK's reading of what it reports; the rest is in Extra.
type CRMStatus struct {
	// Connected reports that a CRM account is connected.
	Connected bool `json:"connected"`
	// Objects are the record types set up for pushing.
	Objects []CRMObject `json:"objects"`
	// AccountMatches reports that the connected account is the one the
	// setup was built for.
	AccountMatches bool   `json:"accountMatches"`
	PortalID       string `json:"portalId,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// CRMStatus checks whether records can be sent (read-only). The path is not
// shown by the reference; the SDK follows the API's pattern:
// GET /v1/integrations/crm/status.
func (s *IntegrationsService) CRMStatus(ctx context.Context, opts ...Option) (*CRMStatus, error) {
	return call[CRMStatus](ctx, s.client, "Integrations.CRMStatus", opts, request{method: http.MethodGet, path: "/v1/integrations/crm/status", kind: retry.Idempotent})
}
