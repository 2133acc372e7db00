package lendgraph

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// PropertiesService serves properties: search (List, All), detail, the
// property chart, bulk delivery, and the calls only properties have:
// count, related records and owner enrichment.
type PropertiesService struct {
	r resource[Property]
}

// Count returns the exact number of properties matching req. The path is
// not shown by the reference; the SDK follows the API's pattern:
// POST /v1/properties/count with the property search body (pagination and
// sort are not sent).
func (s *PropertiesService) Count(ctx context.Context, req *ListRequest, opts ...Option) (*Count, error) {
	body, err := countBody(req)
	if err != nil {
		return nil, err
	}
	return call[Count](ctx, s.r.c, "Properties.Count", opts, postList("/v1/properties/count", body))
}

// ChartResult is one page of a chart (Chart of properties and of the
// resources with analytics).
type ChartResult struct {
	Completeness ChartCompleteness `json:"completeness"`
	Data         []ChartRow        `json:"data"`
	Measure      string            `json:"measure"`
	Segment      string            `json:"segment"`
	Slice        string            `json:"slice"`
	// NextCursor continues the chart (ChartRequest.Pagination.Cursor);
	// empty on the last page.
	NextCursor string `json:"nextCursor"`
	// OmittedCount is the number of slices left out of the answer.
	OmittedCount int64   `json:"omittedCount"`
	Total        float64 `json:"total"`
	// TotalApproximate reports that Total is an estimate.
	TotalApproximate bool `json:"totalApproximate"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// ChartCompleteness says how recent the charted data is.
type ChartCompleteness struct {
	// Through is the date the data is complete through.
	Through string `json:"through"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// ChartRow is one slice of a chart.
type ChartRow struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Count int64  `json:"count"`
	// Excluded is kept as sent: its type is not shown by the reference.
	Excluded json.RawMessage `json:"excluded,omitempty"`
	Value    float64         `json:"value"`
	// Unattributed marks the slice of records without a value for Slice.
	Unattributed bool           `json:"unattributed"`
	Segments     []ChartSegment `json:"segments"`
	// SegmentsOmittedCount is the number of segments left out of Segments.
	SegmentsOmittedCount int64 `json:"segmentsOmittedCount"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// ChartSegment is one segment of a chart slice.
type ChartSegment struct {
	ID    string  `json:"id"`
	Label string  `json:"label"`
	Count int64   `json:"count"`
	Value float64 `json:"value"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// RelatedTo is the kind of record Related links a property to.
type RelatedTo string

// Kinds of related records.
const (
	RelatedCompanies   RelatedTo = "companies"
	RelatedLoans       RelatedTo = "loans"
	RelatedOriginators RelatedTo = "originators"
	RelatedSales       RelatedTo = "sales"
)

// LinkQuality says how the related records were linked.
type LinkQuality string

// Link qualities; other values are kept as sent.
const (
	// LinkPrimary links by the canonical identifier of the pair.
	LinkPrimary LinkQuality = "primary"
	// LinkSecondary links by a weaker alternate identifier, used only when
	// the record carries nothing better.
	LinkSecondary LinkQuality = "secondary"
)

// Related-record limits.
const (
	MaxRelatedLimit     = 200
	DefaultRelatedLimit = 25
)

// RelatedResult lists the ids of records linked to a property.
type RelatedResult struct {
	Data []RelatedRef `json:"data"`
	From string       `json:"from"`
	To   RelatedTo    `json:"to"`
	// Total is the number of linked records (Data holds at most the limit).
	Total       int64       `json:"total"`
	LinkQuality LinkQuality `json:"linkQuality"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// RelatedRef is the id of a related record; fetch it with the resource's Get.
type RelatedRef struct {
	ID string `json:"id"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// Related returns the ids and count of the records of kind to linked to
// property id (GET /v1/properties/{id}/related). limit is 1 to 200; 0 asks
// for the default of 25.
func (s *PropertiesService) Related(ctx context.Context, id string, to RelatedTo, limit int, opts ...Option) (*RelatedResult, error) {
	if id == "" {
		return nil, invalidArg("id", "must not be empty")
	}
	switch to {
	case RelatedCompanies, RelatedLoans, RelatedOriginators, RelatedSales:
	default:
		return nil, invalidArg("to", "%q is not one of companies, loans, originators, sales", string(to))
	}
	if limit < 0 || limit > MaxRelatedLimit {
		return nil, invalidArg("limit", "%d is outside 1..%d (0 asks for the default of %d)", limit, MaxRelatedLimit, DefaultRelatedLimit)
	}
	q := url.Values{"to": {string(to)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return call[RelatedResult](ctx, s.r.c, "Properties.Related", opts, request{method: http.MethodGet,
		path: fmt.Sprintf("/v1/properties/%s/related", url.PathEscape(id)), query: q, kind: retry.Idempotent})
}
