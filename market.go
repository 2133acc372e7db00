package lendgraph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/lendgraph/lendgraph-go/internal/poll"
	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// MarketService serves market records, their analytics, and market
// movement.
type MarketService struct {
	r resource[MarketRecord]
}

// DateRange is the window of a market movement query. Build one with the
// constants and helpers below, or pass any string the API accepts (it is
// checked against the reference's forms before sending).
type DateRange string

// Date ranges of market movement.
const (
	// DateRangeLast12Months is the API's default: the 12 most recent
	// completed calendar months (the current month excluded).
	DateRangeLast12Months DateRange = "last_12_months"
	// DateRangeYearToDate runs from January 1 through the end of last month.
	DateRangeYearToDate DateRange = "year_to_date"
	// DateRangeAllTime is every recorded move.
	DateRangeAllTime DateRange = "all_time"
)

// LastNMonths is the n most recent completed calendar months, the current
// month excluded; n must be 1 to 999.
func LastNMonths(n int) DateRange { return DateRange("last_" + strconv.Itoa(n) + "_months") }

// CalendarYear is one calendar year ("2024").
func CalendarYear(year int) DateRange { return DateRange(fmt.Sprintf("%04d", year)) }

// FiscalYear is the API's fy_YYYY form. The reference says it covers the
// same calendar year as CalendarYear; the spelling fiscal_YYYY is accepted too.
func FiscalYear(year int) DateRange { return DateRange(fmt.Sprintf("fy_%04d", year)) }

var dateRangeRE = regexp.MustCompile(`^(last_([1-9][0-9]{0,2}|0[0-9]{0,2})_months|year_to_date|all_time|[0-9]{4}|fy_[0-9]{4}|fiscal_[0-9]{4})$`)

// Validate reports whether d has one of the reference's forms.
func (d DateRange) Validate() error {
	if d == "" {
		return nil
	}
	m := dateRangeRE.FindStringSubmatch(string(d))
	if m == nil {
		return invalidArg("DateRange", "%q is not one of last_N_months (N 1..999), year_to_date, YYYY, fy_YYYY, fiscal_YYYY, all_time", string(d))
	}
	if m[2] != "" {
		if n, _ := strconv.Atoi(m[2]); n < 1 {
			return invalidArg("DateRange", "%q: N of last_N_months must be 1 to 999", string(d))
		}
	}
	return nil
}

// CompanyCategory classifies the company whose roster changed.
type CompanyCategory string

// Company categories of market movement.
const (
	CategoryBank        CompanyCategory = "BANK"
	CategoryCreditUnion CompanyCategory = "CU"
	CategoryOther       CompanyCategory = "OTHER"
)

// RankBy orders market movement rows.
type RankBy string

// Rankings of market movement.
const (
	// RankByCount ranks by loan officers gained (the API's default).
	RankByCount RankBy = "count"
	// RankByNet ranks by gained minus lost, descending.
	RankByNet RankBy = "net"
)

// MostGainedRequest narrows and orders a most-gained query. The zero value
// asks for the API's defaults (last 12 months, everywhere, ranked by count,
// 10 rows).
type MostGainedRequest struct {
	// DateRange is the window; empty means DateRangeLast12Months.
	DateRange DateRange `url:"dateRange,omitempty"`
	// State is a two-letter state: the loan officer's current NMLS location.
	State string `url:"state,omitempty"`
	// States are more two-letter states, ORed (and combined with State).
	States []string `url:"states,omitempty,comma"`
	// City is the exact city of the current NMLS location, 1 to 100
	// characters; the reference says to pair it with State, so City without
	// State is refused.
	City string `url:"city,omitempty"`
	// CompanyCategories keeps companies of these categories (the destination
	// for arrivals, the company left for departures).
	CompanyCategories []CompanyCategory `url:"companyCategory,omitempty,comma"`
	// RankBy is RankByCount (default) or RankByNet.
	RankBy RankBy `url:"rankBy,omitempty"`
	// Limit is the number of rows, 1 to 100; 0 means the API's default of 10.
	Limit int `url:"limit,omitempty"`
}

// MaxMovementLimit is the most rows one most-gained query returns.
const MaxMovementLimit = 100

func isStateCode(s string) bool {
	if len(s) != 2 {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') {
			return false
		}
	}
	return true
}

// Validate checks p against the reference's rules.
func (p *MostGainedRequest) Validate() error {
	if p == nil {
		return nil
	}
	if err := p.DateRange.Validate(); err != nil {
		return err
	}
	if p.State != "" && !isStateCode(p.State) {
		return invalidArg("State", "%q must be a two-letter state code such as TX", p.State)
	}
	for i, s := range p.States {
		if !isStateCode(s) {
			return invalidArg(fmt.Sprintf("States[%d]", i), "%q must be a two-letter state code such as TX", s)
		}
	}
	if p.City != "" {
		if n := len([]rune(p.City)); n > 100 {
			return invalidArg("City", "is %d characters; the API takes 1 to 100", n)
		}
		if p.State == "" {
			return invalidArg("City", "set State too: the API matches City within a state (the reference says to pair them)")
		}
	}
	for i, c := range p.CompanyCategories {
		switch c {
		case CategoryBank, CategoryCreditUnion, CategoryOther:
		default:
			return invalidArg(fmt.Sprintf("CompanyCategories[%d]", i), "%q is not one of BANK, CU, OTHER", string(c))
		}
	}
	switch p.RankBy {
	case "", RankByCount, RankByNet:
	default:
		return invalidArg("RankBy", "%q is not count or net", string(p.RankBy))
	}
	if p.Limit < 0 || p.Limit > MaxMovementLimit {
		return invalidArg("Limit", "%d is outside 1..%d (0 asks for the default of 10)", p.Limit, MaxMovementLimit)
	}
	return nil
}

// MostGainedResult is the ranked list of companies that gained loan officers.
type MostGainedResult struct {
	Data []MarketMovementRow `json:"data"`
	// Truncated reports that the ranking was cut short by the server.
	Truncated bool `json:"truncated"`
	// Window is the date window the moves were counted in.
	Window MovementWindow `json:"window"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// MarketMovementRow is one company's loan-officer movement. Units, Volume
// and AvgLoanSize are the trailing-14-month production of the loan officers
// on the ranked side.
type MarketMovementRow struct {
	CompanyName   string `json:"companyName"`
	CompanyNMLSID string `json:"companyNmlsId"`
	Gained        int64  `json:"gained"`
	Lost          int64  `json:"lost"`
	// Net is Gained minus Lost.
	Net         int64   `json:"net"`
	Units       int64   `json:"units"`
	Volume      float64 `json:"volume"`
	AvgLoanSize float64 `json:"avgLoanSize"`
	// VolumeTruncated reports that Volume was capped by the server.
	VolumeTruncated bool `json:"volumeTruncated"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// MovementWindow is the date window of a market movement answer.
type MovementWindow struct {
	StartDate string `json:"startDate"`
	EndDate   string `json:"endDate"`
	Months    int    `json:"months"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// computingFallback is the wait when a 202 carries no usable retryAfterMs
// (or the client's cap on server-requested waits, when that is shorter).
const computingFallback = time.Second

// computingBody is the 202 answer of a query still being computed.
type computingBody struct {
	Status       string `json:"status"`
	RetryAfterMS int64  `json:"retryAfterMs"`
}

// MostGained returns the companies that gained the most loan officers. A
// query the server has not finished computing answers 202 {status:
// computing, retryAfterMs}; MostGained waits that long and repeats the same
// request until rows come, or ctx ends (at once, no goroutine left). A
// retryAfterMs above the client's cap on server-requested waits
// (WithMaxServerWait, default one minute) is not waited for: MostGained
// returns a *RateLimitError carrying it at once. Without a usable
// retryAfterMs (absent, zero, negative) it waits a second. The parameters
// are checked before any request.
func (s *MarketService) MostGained(ctx context.Context, req *MostGainedRequest, opts ...MostGainedOption) (_ *MostGainedResult, err error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	plain, progress := splitOptions[MovementProgress](opts)
	ctx, o, err := s.r.c.begin(ctx, "Market.MostGained", plain)
	if err != nil {
		return nil, err
	}
	defer func() { o.end(err) }()
	r := request{method: http.MethodGet, path: "/v1/market/movement/most-gained", query: req, kind: retry.Idempotent}
	var out *MostGainedResult
	err = poll.Until(ctx, poll.Config{Factor: 1}, func(ctx context.Context) (bool, poll.Hint, error) {
		var raw json.RawMessage
		status, err := o.send(ctx, r, &raw)
		if err != nil {
			return false, poll.Hint{}, err
		}
		var body computingBody
		_ = unmarshal(raw, &body) // a rows answer has no status: body stays zero
		if status == http.StatusAccepted || body.Status == "computing" {
			wait, ok := retry.FromMillis(body.RetryAfterMS)
			if !ok {
				wait = min(computingFallback, o.cfg.maxServerWait)
			}
			if rl := o.cfg.refuseWait(&APIError{StatusCode: status, Method: r.method, Path: r.path,
				Message: "still computing"}, wait); rl != nil {
				return false, poll.Hint{}, rl
			}
			if progress != nil {
				progress(&MovementProgress{RetryAfter: wait})
			}
			o.obs.event(Event{Kind: EventServerWait, Reason: "still computing", Wait: wait})
			return false, poll.Hint{AtLeast: wait}, nil
		}
		var rows MostGainedResult
		if err := unmarshal(raw, &rows); err != nil {
			return false, poll.Hint{}, &DecodeError{Method: r.method, Path: r.path, StatusCode: status,
				Err: redactError(err, string(*s.r.c.key))}
		}
		out = &rows
		return true, poll.Hint{}, nil
	})
	if err != nil {
		if cerr := ctxErr(ctx); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("lendgraph: waiting for market movement: %w", cerr)
		}
		return nil, err
	}
	return out, nil
}
