// The JSON methods of the search area's records (see records_json.go for
// why each record has them): unknown members are kept in Extra with both
// encoding/json and encoding/json/v2.

package lendgraph

import "github.com/go-json-experiment/json/jsontext"

type (
	instantSearchResultJSON InstantSearchResult
	originatorMatchJSON     OriginatorMatch
	companyMatchJSON        CompanyMatch
	agentMatchJSON          AgentMatch
	officeMatchJSON         OfficeMatch
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
func (r OriginatorMatch) MarshalJSON() ([]byte, error) { return marshal(originatorMatchJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *OriginatorMatch) UnmarshalJSON(b []byte) error {
	return unmarshal(b, (*originatorMatchJSON)(r))
}

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r OriginatorMatch) MarshalJSONTo(e *jsontext.Encoder) error {
	return encodeTo(e, originatorMatchJSON(r))
}

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *OriginatorMatch) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*originatorMatchJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (r CompanyMatch) MarshalJSON() ([]byte, error) { return marshal(companyMatchJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *CompanyMatch) UnmarshalJSON(b []byte) error { return unmarshal(b, (*companyMatchJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r CompanyMatch) MarshalJSONTo(e *jsontext.Encoder) error {
	return encodeTo(e, companyMatchJSON(r))
}

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *CompanyMatch) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*companyMatchJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (r AgentMatch) MarshalJSON() ([]byte, error) { return marshal(agentMatchJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *AgentMatch) UnmarshalJSON(b []byte) error { return unmarshal(b, (*agentMatchJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r AgentMatch) MarshalJSONTo(e *jsontext.Encoder) error { return encodeTo(e, agentMatchJSON(r)) }

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *AgentMatch) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*agentMatchJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (r OfficeMatch) MarshalJSON() ([]byte, error) { return marshal(officeMatchJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *OfficeMatch) UnmarshalJSON(b []byte) error { return unmarshal(b, (*officeMatchJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r OfficeMatch) MarshalJSONTo(e *jsontext.Encoder) error { return encodeTo(e, officeMatchJSON(r)) }

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *OfficeMatch) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*officeMatchJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (r SearchToken) MarshalJSON() ([]byte, error) { return marshal(searchTokenJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *SearchToken) UnmarshalJSON(b []byte) error { return unmarshal(b, (*searchTokenJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r SearchToken) MarshalJSONTo(e *jsontext.Encoder) error { return encodeTo(e, searchTokenJSON(r)) }

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *SearchToken) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*searchTokenJSON)(r))
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
