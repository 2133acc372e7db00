package lendgraph

import (
	"fmt"
	"strconv"
)

// ListRequest is the common list request: filters, period, sort and page.
type ListRequest struct {
	// FlatFilters maps a field to a value (or a list of values, any of
	// which matches), e.g. {"state": "CA", "transactionType": "purchase"}.
	FlatFilters map[string]any `json:"flatFilters,omitempty"`
	// AdvancedFilters is a boolean tree, the alternative to FlatFilters.
	// Build it with And, Or, Not and the field conditions (Eq, In, Gte, ...).
	AdvancedFilters *Filter `json:"advancedFilters,omitempty"`
	// Period scopes the list in time: PeriodLast12Months, PeriodYear(2024)...
	Period Period `json:"period,omitempty"`
	// Sort orders the records by one or more fields.
	Sort []Sort `json:"sort,omitempty"`
	// Pagination sets the page size (at most 100) and the cursor to resume from.
	Pagination *Pagination `json:"pagination,omitempty"`
}

// Pagination is the page size and the cursor of the page to fetch.
type Pagination struct {
	// Size is the number of records per page, 1 to 100; 0 lets the server choose.
	Size int `json:"size,omitempty"`
	// Cursor resumes a listing from a saved cursor.
	Cursor string `json:"cursor,omitempty"`
}

// SortOrder is a sort direction: Desc (shown by the reference) or Asc. An
// empty order leaves the direction to the API; any other value is refused
// before the request is sent.
type SortOrder string

// Sort directions.
const (
	Desc SortOrder = "desc"
	Asc  SortOrder = "asc"
)

// Sort orders a list by one field.
type Sort struct {
	Field string    `json:"field"`
	Order SortOrder `json:"order,omitempty"`
}

// Period is a time-window scope: a year ("2024") or a named window. Any
// string the API accepts can be used.
type Period string

// Periods shown by the reference.
const (
	PeriodLast12Months Period = "last12Months"
	PeriodYearToDate   Period = "yearToDate"
	PeriodAllTime      Period = "allTime"
)

// PeriodYear scopes to one calendar year.
func PeriodYear(year int) Period { return Period(strconv.Itoa(year)) }

// prepared validates the request and returns a copy safe to modify.
func (r *ListRequest) prepared() (*ListRequest, error) {
	var out ListRequest
	if r != nil {
		out = *r
	}
	if err := out.validate(); err != nil {
		return nil, err
	}
	if out.Pagination != nil {
		p := *out.Pagination
		out.Pagination = &p
	}
	return &out, nil
}

func (r *ListRequest) validate() error {
	if r.Pagination != nil && (r.Pagination.Size < 0 || r.Pagination.Size > MaxPageSize) {
		return invalidArg("Pagination.Size", "%d is outside 1..%d; the API serves at most %d records a page", r.Pagination.Size, MaxPageSize, MaxPageSize)
	}
	if r.FlatFilters != nil && r.AdvancedFilters != nil {
		return invalidArg("ListRequest", "set FlatFilters or AdvancedFilters, not both")
	}
	for i, s := range r.Sort {
		if s.Field == "" {
			return invalidArg(fmt.Sprintf("Sort[%d].Field", i), "must name a field")
		}
		if s.Order != "" && s.Order != Asc && s.Order != Desc {
			return invalidArg(fmt.Sprintf("Sort[%d].Order", i), "%q is not a sort order; use lendgraph.Asc or lendgraph.Desc", s.Order)
		}
	}
	if r.AdvancedFilters != nil {
		if err := r.AdvancedFilters.Validate(); err != nil {
			return err
		}
	}
	return nil
}
