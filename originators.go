package lendgraph

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// OriginatorsService serves loan originators: records, analytics, bulk
// delivery, the originator count and the title-company breakdown.
type OriginatorsService struct {
	r resource[Originator]
}

// CompaniesService serves companies: records, bulk delivery, their
// branches and the lender count (the API has no company analytics).
type CompaniesService struct {
	r resource[Company]
}

// MatchedVia says how a lender filter value was matched. Observed: "id";
// other values are kept as sent.
type MatchedVia string

// MatchedViaID is a lender matched by its id.
const MatchedViaID MatchedVia = "id"

// Confidence is how sure a location normalization is. Observed:
// "normalized"; other values are kept as sent.
type Confidence string

// ConfidenceNormalized is a location matched after normalizing its spelling.
const ConfidenceNormalized Confidence = "normalized"

// LocationField is the filter field a location normalization applies to.
// Observed: "city"; other values are kept as sent.
type LocationField string

// LocationFieldCity is the city filter.
const LocationFieldCity LocationField = "city"

// OriginatorCount is the answer of the originator count. The reference does
// not explain PreviousTotal and TotalIsLowerBound; they are kept as sent.
type OriginatorCount struct {
	Total                  int64                   `json:"total"`
	PreviousTotal          int64                   `json:"previousTotal"`
	TotalIsLowerBound      bool                    `json:"totalIsLowerBound"`
	LenderNormalizations   []LenderNormalization   `json:"lenderNormalizations"`
	LocationNormalizations []LocationNormalization `json:"locationNormalizations"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// LenderNormalization tells how a lender filter value was understood.
type LenderNormalization struct {
	AliasCount     int64      `json:"aliasCount"`
	DisplayName    string     `json:"displayName"`
	ID             string     `json:"id"`
	MatchedVia     MatchedVia `json:"matchedVia"`
	Original       string     `json:"original"`
	TotalDocuments int64      `json:"totalDocuments"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// LocationNormalization tells how a location filter value was understood.
// City and county ids have the form city_<state>_<slug>.
type LocationNormalization struct {
	Candidates  []string      `json:"candidates"`
	Confidence  Confidence    `json:"confidence"`
	DisplayName string        `json:"displayName"`
	Field       LocationField `json:"field"`
	ID          string        `json:"id"`
	Normalized  string        `json:"normalized"`
	Original    string        `json:"original"`
	Variants    []string      `json:"variants"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// Count counts the originators matching req (POST /v1/originators/count).
// Pagination and sort are not sent: the API ignores them.
func (s *OriginatorsService) Count(ctx context.Context, req *ListRequest, opts ...Option) (*OriginatorCount, error) {
	body, err := countBody(req)
	if err != nil {
		return nil, err
	}
	return call[OriginatorCount](ctx, s.r.c, "Originators.Count", opts, postList("/v1/originators/count", body))
}

// TitleCompanyPage is one page of an originator's title-company breakdown.
type TitleCompanyPage struct {
	// Cursor fetches the next page; empty on the last page.
	Cursor string            `json:"cursor"`
	Data   []TitleCompanyRow `json:"data"`
	// Total is the number of ranked title companies.
	Total  int64              `json:"total"`
	Totals TitleCompanyTotals `json:"totals"`
	// Truncated reports that the server cut the breakdown short.
	Truncated bool `json:"truncated"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// TitleCompanyTotals sums the breakdown. Excluded counts the loans whose
// title company is a placeholder (none available, unknown, n/a) or a name
// shorter than 3 characters: those are not ranked.
type TitleCompanyTotals struct {
	Excluded        int64   `json:"excluded"`
	Units           int64   `json:"units"`
	Volume          float64 `json:"volume"`
	VolumePlausible bool    `json:"volumePlausible"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// TitleCompanyRow is one title company of a breakdown. ID is the
// normalized name every spelling was grouped under (legal-form and filler
// words removed, natl read as national); Label is the most-used spelling.
// PctUnits and PctVolume are shares of the whole loan population of the
// window, loans without a title company included, so a page does not sum
// to 100.
type TitleCompanyRow struct {
	ID        string  `json:"id"`
	Label     string  `json:"label"`
	Name      string  `json:"name,omitempty"`
	Units     int64   `json:"units"`
	Volume    float64 `json:"volume"`
	PctUnits  float64 `json:"pctUnits"`
	PctVolume float64 `json:"pctVolume"`
	// Excluded is kept as sent: its type is not shown by the reference.
	Excluded json.RawMessage `json:"excluded,omitempty"`
	Company  *CompanyRef     `json:"company,omitempty"`
	Office   *OfficeRef      `json:"office,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// CompanyRef names a company.
type CompanyRef struct {
	Name   string `json:"name"`
	NMLSID string `json:"nmlsId"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// OfficeRef names an office.
type OfficeRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// nmlsPath checks an NMLS id and returns the path under the resource.
func nmlsPath(resource, nmlsID, rest string) (string, error) {
	if nmlsID == "" {
		return "", invalidArg("nmlsID", "must not be empty")
	}
	return "/v1/" + resource + "/" + url.PathEscape(nmlsID) + rest, nil
}

// TitleCompanies returns one page of the originator's title-company
// breakdown: the title companies on the originator's loans in the
// recording-date window (req.Period), merged across spellings, ranked.
// Pages hold at most 100 rows (req.Pagination). The request body is not
// shown by the reference; the SDK sends the common list request.
func (s *OriginatorsService) TitleCompanies(ctx context.Context, nmlsID string, req *ListRequest, opts ...Option) (*TitleCompanyPage, error) {
	path, err := nmlsPath("originators", nmlsID, "/breakdowns/title-companies")
	if err != nil {
		return nil, err
	}
	body, err := req.prepared()
	if err != nil {
		return nil, err
	}
	return call[TitleCompanyPage](ctx, s.r.c, "Originators.TitleCompanies", opts, postList(path, body))
}

// TitleCompaniesPager returns a pager over every row of the breakdown;
// opts apply to every page.
func (s *OriginatorsService) TitleCompaniesPager(nmlsID string, req *ListRequest, opts ...Option) (*Pager[TitleCompanyRow], error) {
	return s.titleCompanies(nmlsID, req, "Originators.TitleCompaniesPager", opts)
}

func (s *OriginatorsService) titleCompanies(nmlsID string, req *ListRequest, name string, opts []Option) (*Pager[TitleCompanyRow], error) {
	path, err := nmlsPath("originators", nmlsID, "/breakdowns/title-companies")
	if err != nil {
		return nil, err
	}
	return subPager(s.r.c, name, opts, req, path, func(p *TitleCompanyPage) ([]TitleCompanyRow, string) { return p.Data, p.Cursor })
}

// AllTitleCompanies yields every row of the breakdown, following cursors;
// each range starts again from the first page (see the package's iterator
// contract).
func (s *OriginatorsService) AllTitleCompanies(ctx context.Context, nmlsID string, req *ListRequest, opts ...Option) iter.Seq2[TitleCompanyRow, error] {
	p, err := s.titleCompanies(nmlsID, req, "Originators.AllTitleCompanies", opts)
	return pagedAll(ctx, p, err)
}

// postList is the POST of a list body to path: a read.
func postList(path string, body *ListRequest) request {
	return request{method: http.MethodPost, path: path, body: body, kind: retry.Idempotent}
}

// subPager is a pager of client c, named name, over the pages of type P
// that a POST of req to path returns; rows reads a page's rows and the
// cursor of the next.
func subPager[P, Row any](c *Client, name string, opts []Option, req *ListRequest, path string, rows func(*P) ([]Row, string)) (*Pager[Row], error) {
	return listPager(c, name, opts, req, func(ctx context.Context, o *operation, body *ListRequest, _ func(string)) ([]Row, string, error) {
		p, err := sendFor[P](ctx, o, postList(path, body))
		if err != nil {
			return nil, "", err
		}
		data, next := rows(p)
		return data, next, nil
	})
}

// BranchPage is one page of a company's branches.
type BranchPage struct {
	// Cursor fetches the next page; empty on the last page.
	Cursor string   `json:"cursor"`
	Data   []Branch `json:"data"`
	// LocationNormalizations tells how location filters were understood.
	LocationNormalizations []LocationNormalization `json:"locationNormalizations"`
	Total                  int64                   `json:"total"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// Branches returns one page of the company's branches
// (POST /v1/companies/{nmlsId}/branches). The request body is not shown by
// the reference; the SDK sends the common list request.
func (s *CompaniesService) Branches(ctx context.Context, nmlsID string, req *ListRequest, opts ...Option) (*BranchPage, error) {
	path, err := nmlsPath("companies", nmlsID, "/branches")
	if err != nil {
		return nil, err
	}
	body, err := req.prepared()
	if err != nil {
		return nil, err
	}
	return call[BranchPage](ctx, s.r.c, "Companies.Branches", opts, postList(path, body))
}

// BranchesPager returns a pager over every branch of the company; opts
// apply to every page.
func (s *CompaniesService) BranchesPager(nmlsID string, req *ListRequest, opts ...Option) (*Pager[Branch], error) {
	return s.branches(nmlsID, req, "Companies.BranchesPager", opts)
}

func (s *CompaniesService) branches(nmlsID string, req *ListRequest, name string, opts []Option) (*Pager[Branch], error) {
	path, err := nmlsPath("companies", nmlsID, "/branches")
	if err != nil {
		return nil, err
	}
	return subPager(s.r.c, name, opts, req, path, func(p *BranchPage) ([]Branch, string) { return p.Data, p.Cursor })
}

// AllBranches yields every branch of the company, following cursors; each
// range starts again from the first page (see the package's iterator
// contract).
func (s *CompaniesService) AllBranches(ctx context.Context, nmlsID string, req *ListRequest, opts ...Option) iter.Seq2[Branch, error] {
	p, err := s.branches(nmlsID, req, "Companies.AllBranches", opts)
	return pagedAll(ctx, p, err)
}

// LenderCount returns the exact number of lenders matching req. The path is
// not shown by the reference; the SDK follows the API's pattern:
// POST /v1/lenders/count, with the lenders list body (pagination and sort
// are not sent).
func (s *CompaniesService) LenderCount(ctx context.Context, req *ListRequest, opts ...Option) (*Count, error) {
	body, err := countBody(req)
	if err != nil {
		return nil, err
	}
	return call[Count](ctx, s.r.c, "Companies.LenderCount", opts, postList("/v1/lenders/count", body))
}
