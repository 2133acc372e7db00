package lendgraph

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// PropertiesQueryAPI is the part of c.Properties that queries property data
// (search, detail, count, chart, related records); the enrichment and
// delivery calls have interfaces of their own.
type PropertiesQueryAPI interface {
	ResourceAPI[Property]
	Count(ctx context.Context, req *ListRequest) (*Count, error)
	Chart(ctx context.Context, req *ChartRequest) (*ChartResponse, error)
	ChartPager(req *ChartRequest) (*Pager[ChartRow], error)
	AllChart(ctx context.Context, req *ChartRequest) iter.Seq2[ChartRow, error]
	Related(ctx context.Context, id string, to RelatedTo, limit int) (*RelatedResponse, error)
}

var _ PropertiesQueryAPI = (*PropertiesService)(nil)

// PropertiesAPI is everything c.Properties offers: records, counts and
// charts, enrichment, and bulk delivery.
type PropertiesAPI interface {
	PropertiesQueryAPI
	EnrichmentAPI
	DelivererAPI[Property]
}

var _ PropertiesAPI = (*PropertiesService)(nil)

// PropertiesService serves properties: search (List, All), detail, bulk
// delivery, and the property-only calls (enrichment, count, chart, related
// records).
type PropertiesService struct {
	*ResourceService[Property]
	*DeliveryService[Property]
	client *Client
}

// Count returns the exact number of properties matching req. The path is
// not shown by the reference; the SDK follows the API's pattern:
// POST /v1/properties/count with the property search body (pagination and
// sort are not sent).
func (s *PropertiesService) Count(ctx context.Context, req *ListRequest) (*Count, error) {
	body, err := countBody(req)
	if err != nil {
		return nil, err
	}
	return call[Count](ctx, s.client, request{op: "Properties.Count", method: http.MethodPost, path: "/v1/properties/count", body: body, kind: retry.Idempotent})
}

// ChartResponse is one page of a property chart.
type ChartResponse struct {
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

func (r *ChartRequest) preparedChart() (*ChartRequest, error) {
	body, err := r.prepared()
	if err != nil {
		return nil, err
	}
	if body.Slice == "" {
		return nil, invalidArg("Slice", "must name the field to slice by, e.g. \"city\"")
	}
	return body, nil
}

// Chart returns one page of a property chart
// (POST /v1/properties/analytics/chart). Slice is required.
func (s *PropertiesService) Chart(ctx context.Context, req *ChartRequest) (*ChartResponse, error) {
	body, err := req.preparedChart()
	if err != nil {
		return nil, err
	}
	return s.chart(ctx, body)
}

func (s *PropertiesService) chart(ctx context.Context, body *ChartRequest) (*ChartResponse, error) {
	return call[ChartResponse](ctx, s.client, request{op: "Properties.Chart", method: http.MethodPost, path: "/v1/properties/analytics/chart", body: body, kind: retry.Idempotent})
}

// ChartPager returns a pager over every slice of the chart, following
// NextCursor.
func (s *PropertiesService) ChartPager(req *ChartRequest) (*Pager[ChartRow], error) {
	body, err := req.preparedChart()
	if err != nil {
		return nil, err
	}
	return listPager(&body.ListRequest, func(ctx context.Context, lr *ListRequest) ([]ChartRow, string, error) {
		b := *body
		b.ListRequest = *lr
		page, err := s.chart(ctx, &b)
		if err != nil {
			return nil, "", err
		}
		return page.Data, page.NextCursor, nil
	})
}

// AllChart yields every slice of the chart, following NextCursor; each
// range starts again from the first page (see the package's iterator
// contract).
func (s *PropertiesService) AllChart(ctx context.Context, req *ChartRequest) iter.Seq2[ChartRow, error] {
	p, err := s.ChartPager(req)
	return observeSeq(ctx, s.client, "Properties.AllChart", true, func(ctx context.Context) iter.Seq2[ChartRow, error] { return pagedAll(ctx, p, err) })
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

// RelatedResponse lists the ids of records linked to a property.
type RelatedResponse struct {
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
func (s *PropertiesService) Related(ctx context.Context, id string, to RelatedTo, limit int) (*RelatedResponse, error) {
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
	return call[RelatedResponse](ctx, s.client, request{op: "Properties.Related", method: http.MethodGet,
		path: fmt.Sprintf("/v1/properties/%s/related", url.PathEscape(id)), query: q, kind: retry.Idempotent})
}
