package lendgraph

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// AnalyticsAPI is the analytics of a resource: summary, time series and
// chart. Agents, originators, loans, sales and market offer them.
type AnalyticsAPI interface {
	Summary(ctx context.Context, req *ListRequest) (*AnalyticsResult, error)
	TimeSeries(ctx context.Context, req *ListRequest) (*AnalyticsResult, error)
	Chart(ctx context.Context, req *ChartRequest) (*AnalyticsResult, error)
}

var _ AnalyticsAPI = (*AnalyticsService)(nil)

// AnalyticsService is the analytics of one resource. The services of the
// resources that offer analytics (agents, originators, loans, sales and
// market) embed it.
type AnalyticsService struct {
	client *Client
	name   string
}

// ChartRequest is a chart query: list-style filters plus how to slice,
// measure and segment the matching records. For properties Slice is
// required (e.g. "city"); the allowed values of Slice, Measure and Segment
// are not shown by the reference and are sent as given. Continue a chart
// with Pagination.Cursor set to the previous answer's NextCursor.
type ChartRequest struct {
	ListRequest
	Slice   string `json:"slice,omitempty"`
	Measure string `json:"measure,omitempty"`
	Segment string `json:"segment,omitempty"`
}

// prepared validates the request and returns a copy safe to modify.
func (r *ChartRequest) prepared() (*ChartRequest, error) {
	var out ChartRequest
	if r != nil {
		out = *r
	}
	lr, err := out.ListRequest.prepared()
	if err != nil {
		return nil, err
	}
	out.ListRequest = *lr
	return &out, nil
}

// AnalyticsResult is an analytics answer. The reference does not show the
// shapes of summary, time-series and chart answers of the resources, so the
// body is kept exactly as sent: read it with Decode into your own type, or
// look at Raw.
type AnalyticsResult struct {
	// Raw is the response body.
	Raw json.RawMessage
}

// Decode decodes the body into v (a struct, a map, ...).
func (r *AnalyticsResult) Decode(v any) error { return unmarshal(r.Raw, v) }

// MarshalJSON writes the body as received.
func (r AnalyticsResult) MarshalJSON() ([]byte, error) { return r.Raw, nil }

// Summary returns the analytics summary of the records matching req
// (POST /v1/<resource>/analytics/summary).
func (s *AnalyticsService) Summary(ctx context.Context, req *ListRequest) (*AnalyticsResult, error) {
	body, err := req.prepared()
	if err != nil {
		return nil, err
	}
	return s.analytics(ctx, "summary", body)
}

// TimeSeries returns the analytics time series of the records matching req
// (POST /v1/<resource>/analytics/time-series).
func (s *AnalyticsService) TimeSeries(ctx context.Context, req *ListRequest) (*AnalyticsResult, error) {
	body, err := req.prepared()
	if err != nil {
		return nil, err
	}
	return s.analytics(ctx, "time-series", body)
}

// Chart returns the analytics chart of the records matching req
// (POST /v1/<resource>/analytics/chart). Properties have their own typed
// chart: c.Properties.Chart.
func (s *AnalyticsService) Chart(ctx context.Context, req *ChartRequest) (*AnalyticsResult, error) {
	body, err := req.prepared()
	if err != nil {
		return nil, err
	}
	return s.analytics(ctx, "chart", body)
}

// analytics posts an analytics query. It is a read: safe to retry.
func (s *AnalyticsService) analytics(ctx context.Context, kind string, body any) (*AnalyticsResult, error) {
	var out AnalyticsResult
	if _, err := s.client.send(ctx, request{op: opName(s.name, analyticsMethod[kind]), method: http.MethodPost, path: "/v1/" + s.name + "/analytics/" + kind, body: body, kind: retry.Idempotent}, &out.Raw); err != nil {
		return nil, err
	}
	return &out, nil
}
