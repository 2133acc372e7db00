package lendgraph

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// SavedFiltersAPI is what c.SavedFilters offers.
type SavedFiltersAPI interface {
	List(ctx context.Context, q *SavedFiltersRequest, opts ...Option) ([]SavedFilter, error)
	Create(ctx context.Context, f *CreateSavedFilterRequest, opts ...Option) (*SavedFilter, error)
	Update(ctx context.Context, id string, u *UpdateSavedFilterRequest, opts ...Option) (*SavedFilter, error)
	Delete(ctx context.Context, id string, opts ...Option) (*DeleteSavedFilterResult, error)
}

var _ SavedFiltersAPI = (*SavedFiltersService)(nil)

// SavedFiltersService serves saved filters and saved CRM views, scoped to
// the active organization and the caller's visibility. A refused query
// gives *ValidationError with Code and Issues.
//
// The paths of List and Create are not shown by the reference; the SDK
// follows the API's pattern: GET and POST /v1/saved-filters.
type SavedFiltersService struct {
	client *Client
}

// SavedFilterKind is "filter" (shown) or a saved CRM view (spelling not
// shown); other values are kept as sent.
type SavedFilterKind string

// KindFilter is a saved filter.
const KindFilter SavedFilterKind = "filter"

// Fidelity says how faithfully a saved query was kept ("exact" shown).
type Fidelity string

// FidelityExact is a query kept exactly.
const FidelityExact Fidelity = "exact"

// Visibility says who sees a saved filter ("private" shown).
type Visibility string

// VisibilityPrivate is a filter only its creator sees.
const VisibilityPrivate Visibility = "private"

// FilterIcon is a saved filter's icon.
type FilterIcon struct {
	Type  string `json:"type"`
	Color string `json:"color"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// SavedFilter is a saved filter or saved CRM view.
type SavedFilter struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Icon *FilterIcon     `json:"icon,omitempty"`
	Kind SavedFilterKind `json:"kind"`
	// Target is the resource the filter applies to ("originators"); it
	// cannot change after creation.
	Target      string `json:"target"`
	OperationID string `json:"operationId,omitempty"`
	// Query and UIState are kept exactly as sent; decode them with
	// encoding/json or json/v2 into your own types.
	Query          json.RawMessage `json:"query,omitempty"`
	QueryVersion   int             `json:"queryVersion"`
	UIState        json.RawMessage `json:"uiState,omitempty"`
	UIStateVersion int             `json:"uiStateVersion"`
	Fidelity       Fidelity        `json:"fidelity,omitempty"`
	// Stale reports that the stored query no longer matches the target's
	// fields; StaleIssues says where.
	Stale       bool       `json:"stale"`
	StaleIssues []Issue    `json:"staleIssues,omitempty"`
	Unmapped    []string   `json:"unmapped,omitempty"`
	Visibility  Visibility `json:"visibility,omitempty"`
	CreatedAt   time.Time  `json:"createdAt,omitzero"`
	UpdatedAt   time.Time  `json:"updatedAt,omitzero"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// SavedFiltersRequest narrows List.
type SavedFiltersRequest struct {
	Target string          `url:"target,omitempty"`
	Kind   SavedFilterKind `url:"kind,omitempty"`
}

// CreateSavedFilterRequest is the body of Create. Its field names follow the saved
// filter record (the reference does not show the create body).
type CreateSavedFilterRequest struct {
	Name        string          `json:"name"`
	Icon        *FilterIcon     `json:"icon,omitempty"`
	Kind        SavedFilterKind `json:"kind,omitempty"`
	Target      string          `json:"target"`
	OperationID string          `json:"operationId,omitempty"`
	// Query is the list query to save, e.g. a *ListRequest or a map.
	Query      any        `json:"query"`
	UIState    any        `json:"uiState,omitempty"`
	Visibility Visibility `json:"visibility,omitempty"`
}

// UpdateSavedFilterRequest is the body of Update: rename, change the icon, or
// replace the query and UI state. Nil and empty fields are left unchanged.
// It has no Target: the target of a saved filter cannot change.
type UpdateSavedFilterRequest struct {
	Name    string      `json:"name,omitempty"`
	Icon    *FilterIcon `json:"icon,omitempty"`
	Query   any         `json:"query,omitempty"`
	UIState any         `json:"uiState,omitempty"`
}

// DeleteSavedFilterResult is the answer of Delete.
type DeleteSavedFilterResult struct {
	Deleted bool `json:"deleted"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

var savedFilterIDRE = regexp.MustCompile(`^[\w-]{1,32}$`)

func savedFilterPath(id string) (string, error) {
	if !savedFilterIDRE.MatchString(id) {
		return "", invalidArg("id", "%q: a saved-filter id is 1 to 32 letters, digits, _ or -", id)
	}
	return "/v1/saved-filters/" + url.PathEscape(id), nil
}

// List returns the caller's saved filters and saved CRM views in the active
// organization, oldest first, narrowed by q's target and kind.
func (s *SavedFiltersService) List(ctx context.Context, q *SavedFiltersRequest, opts ...Option) ([]SavedFilter, error) {
	out, err := call[[]SavedFilter](ctx, s.client, "SavedFilters.List", opts, request{data: true, method: http.MethodGet, path: "/v1/saved-filters", query: q, kind: retry.Idempotent})
	if err != nil {
		return nil, err
	}
	return *out, nil
}

// Create saves a filter. The query is validated by the server as on every
// write. A create repeated after the server acted would save two filters,
// so it is not retried then.
func (s *SavedFiltersService) Create(ctx context.Context, f *CreateSavedFilterRequest, opts ...Option) (*SavedFilter, error) {
	if f == nil || f.Name == "" {
		return nil, invalidArg("Name", "is required")
	}
	if f.Target == "" {
		return nil, invalidArg("Target", "is required, e.g. \"originators\"")
	}
	if f.Query == nil {
		return nil, invalidArg("Query", "is required")
	}
	return call[SavedFilter](ctx, s.client, "SavedFilters.Create", opts, request{data: true, method: http.MethodPost, path: "/v1/saved-filters", body: f, kind: retry.Unrepeatable})
}

// Update renames a saved filter, changes its icon, or replaces its query
// and UI state (PATCH /v1/saved-filters/{id}). A new query is validated as
// on create. It replaces values, so repeating it is harmless.
func (s *SavedFiltersService) Update(ctx context.Context, id string, u *UpdateSavedFilterRequest, opts ...Option) (*SavedFilter, error) {
	path, err := savedFilterPath(id)
	if err != nil {
		return nil, err
	}
	if u == nil || (u.Name == "" && u.Icon == nil && u.Query == nil && u.UIState == nil) {
		return nil, invalidArg("update", "nothing to change: set Name, Icon, Query or UIState")
	}
	return call[SavedFilter](ctx, s.client, "SavedFilters.Update", opts, request{data: true, method: http.MethodPatch, path: path, body: u, kind: retry.Idempotent})
}

// Delete deletes a saved filter (DELETE /v1/saved-filters/{id}).
func (s *SavedFiltersService) Delete(ctx context.Context, id string, opts ...Option) (*DeleteSavedFilterResult, error) {
	path, err := savedFilterPath(id)
	if err != nil {
		return nil, err
	}
	return call[DeleteSavedFilterResult](ctx, s.client, "SavedFilters.Delete", opts, request{data: true, method: http.MethodDelete, path: path, kind: retry.Idempotent})
}
