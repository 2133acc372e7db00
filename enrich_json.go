// The JSON methods of the enrichment records, after records_json.go:
// unknown members are kept in Extra by both encoding/json and
// encoding/json/v2.

package lendgraph

import "github.com/go-json-experiment/json/jsontext"

type (
	enrichResultJSON    EnrichResult
	enrichDataJSON      EnrichData
	enrichCountsJSON    EnrichCounts
	enrichJobStatusJSON EnrichJobStatus
	enrichmentEntryJSON EnrichmentEntry
	enrichRowJSON       EnrichmentResultEntry
	personJSON          Person
	personNameJSON      PersonName
	phoneNumberJSON     PhoneNumber
	emailJSON           Email
	addressJSON         Address
)

// MarshalJSON implements json.Marshaler.
func (r EnrichResult) MarshalJSON() ([]byte, error) { return marshal(enrichResultJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *EnrichResult) UnmarshalJSON(b []byte) error { return unmarshal(b, (*enrichResultJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r EnrichResult) MarshalJSONTo(e *jsontext.Encoder) error {
	return encodeTo(e, enrichResultJSON(r))
}

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *EnrichResult) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*enrichResultJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (r EnrichData) MarshalJSON() ([]byte, error) { return marshal(enrichDataJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *EnrichData) UnmarshalJSON(b []byte) error { return unmarshal(b, (*enrichDataJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r EnrichData) MarshalJSONTo(e *jsontext.Encoder) error { return encodeTo(e, enrichDataJSON(r)) }

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *EnrichData) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*enrichDataJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (r EnrichCounts) MarshalJSON() ([]byte, error) { return marshal(enrichCountsJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *EnrichCounts) UnmarshalJSON(b []byte) error { return unmarshal(b, (*enrichCountsJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r EnrichCounts) MarshalJSONTo(e *jsontext.Encoder) error {
	return encodeTo(e, enrichCountsJSON(r))
}

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *EnrichCounts) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*enrichCountsJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (s EnrichJobStatus) MarshalJSON() ([]byte, error) { return marshal(enrichJobStatusJSON(s)) }

// UnmarshalJSON implements json.Unmarshaler.
func (s *EnrichJobStatus) UnmarshalJSON(b []byte) error {
	return unmarshal(b, (*enrichJobStatusJSON)(s))
}

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (s EnrichJobStatus) MarshalJSONTo(e *jsontext.Encoder) error {
	return encodeTo(e, enrichJobStatusJSON(s))
}

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (s *EnrichJobStatus) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*enrichJobStatusJSON)(s))
}

// MarshalJSON implements json.Marshaler.
func (r EnrichmentEntry) MarshalJSON() ([]byte, error) { return marshal(enrichmentEntryJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *EnrichmentEntry) UnmarshalJSON(b []byte) error {
	return unmarshal(b, (*enrichmentEntryJSON)(r))
}

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r EnrichmentEntry) MarshalJSONTo(e *jsontext.Encoder) error {
	return encodeTo(e, enrichmentEntryJSON(r))
}

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *EnrichmentEntry) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*enrichmentEntryJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (r EnrichmentResultEntry) MarshalJSON() ([]byte, error) { return marshal(enrichRowJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *EnrichmentResultEntry) UnmarshalJSON(b []byte) error {
	return unmarshal(b, (*enrichRowJSON)(r))
}

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r EnrichmentResultEntry) MarshalJSONTo(e *jsontext.Encoder) error {
	return encodeTo(e, enrichRowJSON(r))
}

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *EnrichmentResultEntry) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*enrichRowJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (p Person) MarshalJSON() ([]byte, error) { return marshal(personJSON(p)) }

// UnmarshalJSON implements json.Unmarshaler.
func (p *Person) UnmarshalJSON(b []byte) error { return unmarshal(b, (*personJSON)(p)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (p Person) MarshalJSONTo(e *jsontext.Encoder) error { return encodeTo(e, personJSON(p)) }

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (p *Person) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*personJSON)(p))
}

// MarshalJSON implements json.Marshaler.
func (r PersonName) MarshalJSON() ([]byte, error) { return marshal(personNameJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *PersonName) UnmarshalJSON(b []byte) error { return unmarshal(b, (*personNameJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r PersonName) MarshalJSONTo(e *jsontext.Encoder) error { return encodeTo(e, personNameJSON(r)) }

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *PersonName) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*personNameJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (r PhoneNumber) MarshalJSON() ([]byte, error) { return marshal(phoneNumberJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *PhoneNumber) UnmarshalJSON(b []byte) error { return unmarshal(b, (*phoneNumberJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r PhoneNumber) MarshalJSONTo(e *jsontext.Encoder) error {
	return encodeTo(e, phoneNumberJSON(r))
}

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *PhoneNumber) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*phoneNumberJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (r Email) MarshalJSON() ([]byte, error) { return marshal(emailJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *Email) UnmarshalJSON(b []byte) error { return unmarshal(b, (*emailJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r Email) MarshalJSONTo(e *jsontext.Encoder) error { return encodeTo(e, emailJSON(r)) }

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *Email) UnmarshalJSONFrom(d *jsontext.Decoder) error { return decodeFrom(d, (*emailJSON)(r)) }

// MarshalJSON implements json.Marshaler.
func (r Address) MarshalJSON() ([]byte, error) { return marshal(addressJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *Address) UnmarshalJSON(b []byte) error { return unmarshal(b, (*addressJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r Address) MarshalJSONTo(e *jsontext.Encoder) error { return encodeTo(e, addressJSON(r)) }

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *Address) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*addressJSON)(r))
}
