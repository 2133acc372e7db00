package lendgraph

import (
	"encoding/json"
)

// ChartRequest is a chart query: list-style filters plus how to slice,
// measure and segment the matching records. For properties Slice is
// required (e.g. "city"); the other resources' charts may leave it to the
// server. The allowed values of Slice, Measure and Segment are not shown
// by the reference and are sent as given. Continue a chart with
// Pagination.Cursor set to the previous answer's NextCursor.
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

// AnalyticsResult is an analytics summary or time series. The reference
// does not show their shapes, so the body is kept exactly as sent: read
// it with Decode into your own type, or look at Raw. (A chart has a shape:
// ChartResult.)
type AnalyticsResult struct {
	// Raw is the response body.
	Raw json.RawMessage
}

// Decode decodes the body into v (a struct, a map, ...).
func (r *AnalyticsResult) Decode(v any) error { return unmarshal(r.Raw, v) }

// MarshalJSON writes the body as received.
func (r AnalyticsResult) MarshalJSON() ([]byte, error) { return r.Raw, nil }
