package lendgraph

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// LocationsAPI is what c.Locations offers.
type LocationsAPI interface {
	Suggest(ctx context.Context, q string, limit int, opts ...Option) ([]LocationSuggestion, error)
	Retrieve(ctx context.Context, mapID string, opts ...Option) (*Location, error)
}

var _ LocationsAPI = (*LocationsService)(nil)

// LocationsService is location autocomplete and retrieval.
type LocationsService struct {
	client *Client
}

// SuggestionSource says where a suggestion comes from.
type SuggestionSource string

// SourceDictionary marks cities and counties from the service's own
// location dictionary; their ID is accepted by city and county filters.
// Street addresses come from an external mapping provider, whose source
// value is not shown by the reference (kept as sent).
const SourceDictionary SuggestionSource = "dictionary"

// Location suggestion limits.
const (
	MaxSuggestLimit     = 10
	DefaultSuggestLimit = 5
)

// LocationSuggestion is one autocomplete suggestion.
type LocationSuggestion struct {
	// ID is the dictionary id of a city or county (city_<state>_<slug>),
	// usable in city and county filters.
	ID             string `json:"id"`
	Name           string `json:"name"`
	PlaceFormatted string `json:"place_formatted"`
	FullAddress    string `json:"full_address"`
	State          string `json:"state"`
	// Type and FeatureType are kept as sent: their values are not shown.
	Type        string `json:"type"`
	FeatureType string `json:"feature_type"`
	// TotalCount is the number of records in the place.
	TotalCount int64            `json:"totalCount"`
	Source     SuggestionSource `json:"source"`
	// MapID is passed to Retrieve for normalized details and coordinates.
	MapID string `json:"map_id"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// Location is the normalized geographic detail of a suggestion. The
// reference shows neither its path nor its shape: the typed fields are the
// SDK's reading, named like the suggestion's; the rest is in Extra.
type Location struct {
	MapID       string  `json:"map_id"`
	ID          string  `json:"id,omitempty"`
	Name        string  `json:"name"`
	FullAddress string  `json:"full_address,omitempty"`
	State       string  `json:"state,omitempty"`
	Lat         float64 `json:"lat"`
	Lon         float64 `json:"lon"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// Suggest returns up to limit places matching q (GET /v1/locations/suggest).
// q must not be empty; limit is 1 to 10, 0 asks for the default of 5.
func (s *LocationsService) Suggest(ctx context.Context, q string, limit int, opts ...Option) ([]LocationSuggestion, error) {
	if strings.TrimSpace(q) == "" {
		return nil, invalidArg("q", "must not be empty: type at least one character of a place")
	}
	if limit < 0 || limit > MaxSuggestLimit {
		return nil, invalidArg("limit", "%d is outside 1..%d (0 asks for the default of %d)", limit, MaxSuggestLimit, DefaultSuggestLimit)
	}
	v := url.Values{"q": {q}}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	out, err := call[struct {
		Suggestions []LocationSuggestion `json:"suggestions"`
	}](ctx, s.client, "Locations.Suggest", opts, request{method: http.MethodGet, path: "/v1/locations/suggest", query: v, kind: retry.Idempotent})
	if err != nil {
		return nil, err
	}
	return out.Suggestions, nil
}

// Retrieve returns the normalized details and coordinates of a suggestion's
// MapID. The path is not shown by the reference; the SDK follows the API's
// pattern: GET /v1/locations/retrieve?mapId=...
func (s *LocationsService) Retrieve(ctx context.Context, mapID string, opts ...Option) (*Location, error) {
	if mapID == "" {
		return nil, invalidArg("mapID", "must not be empty: use a suggestion's MapID")
	}
	return call[Location](ctx, s.client, "Locations.Retrieve", opts, request{method: http.MethodGet, path: "/v1/locations/retrieve",
		query: url.Values{"mapId": {mapID}}, kind: retry.Idempotent})
}
