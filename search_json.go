// The JSON methods of the search area's records (see records_json.go for
// why each record has them): unknown members are kept in Extra with both
// encoding/json and encoding/json/v2.

package lendgraph

import "github.com/go-json-experiment/json/jsontext"

type (
	instantSearchResultJSON InstantSearchResult
	personMatchJSON         PersonMatch
	organizationMatchJSON   OrganizationMatch
	searchTokenJSON         SearchToken
	hostSearchResultJSON    HostSearchResult
	originatorHitJSON       OriginatorHit
)

// MarshalJSON implements json.Marshaler.
func (r InstantSearchResult) MarshalJSON() ([]byte, error) {
	return marshal(instantSearchResultJSON(r))
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *InstantSearchResult) UnmarshalJSON(b []byte) error {
	return unmarshal(b, (*instantSearchResultJSON)(r))
}

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r InstantSearchResult) MarshalJSONTo(e *jsontext.Encoder) error {
	return encodeTo(e, instantSearchResultJSON(r))
}

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *InstantSearchResult) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*instantSearchResultJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (r PersonMatch) MarshalJSON() ([]byte, error) { return marshal(personMatchJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *PersonMatch) UnmarshalJSON(b []byte) error {
	return unmarshal(b, (*personMatchJSON)(r))
}

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r PersonMatch) MarshalJSONTo(e *jsontext.Encoder) error {
	return encodeTo(e, personMatchJSON(r))
}

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *PersonMatch) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*personMatchJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (r OrganizationMatch) MarshalJSON() ([]byte, error) { return marshal(organizationMatchJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *OrganizationMatch) UnmarshalJSON(b []byte) error {
	return unmarshal(b, (*organizationMatchJSON)(r))
}

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r OrganizationMatch) MarshalJSONTo(e *jsontext.Encoder) error {
	return encodeTo(e, organizationMatchJSON(r))
}

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *OrganizationMatch) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*organizationMatchJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (t SearchToken) MarshalJSON() ([]byte, error) { return marshal(searchTokenJSON(t)) }

// UnmarshalJSON implements json.Unmarshaler.
func (t *SearchToken) UnmarshalJSON(b []byte) error { return unmarshal(b, (*searchTokenJSON)(t)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (t SearchToken) MarshalJSONTo(e *jsontext.Encoder) error { return encodeTo(e, searchTokenJSON(t)) }

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (t *SearchToken) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*searchTokenJSON)(t))
}

// MarshalJSON implements json.Marshaler.
func (r HostSearchResult) MarshalJSON() ([]byte, error) { return marshal(hostSearchResultJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *HostSearchResult) UnmarshalJSON(b []byte) error {
	return unmarshal(b, (*hostSearchResultJSON)(r))
}

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r HostSearchResult) MarshalJSONTo(e *jsontext.Encoder) error {
	return encodeTo(e, hostSearchResultJSON(r))
}

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *HostSearchResult) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*hostSearchResultJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (r OriginatorHit) MarshalJSON() ([]byte, error) { return marshal(originatorHitJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *OriginatorHit) UnmarshalJSON(b []byte) error { return unmarshal(b, (*originatorHitJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r OriginatorHit) MarshalJSONTo(e *jsontext.Encoder) error {
	return encodeTo(e, originatorHitJSON(r))
}

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *OriginatorHit) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*originatorHitJSON)(r))
}
