// Code written once per record type: encoding/json (v1) users see the same
// JSON as the SDK, with unknown members inlined, and encoding/json/v2 decodes
// the records in one streaming pass. Each *JSON type has the fields of its
// record and none of its methods, which stops the recursion.

package lendgraph

import "github.com/go-json-experiment/json/jsontext"

type (
	agentJSON        Agent
	originatorJSON   Originator
	companyJSON      Company
	loanJSON         Loan
	propertyJSON     Property
	branchJSON       Branch
	saleJSON         Sale
	marketRecordJSON MarketRecord
)

// MarshalJSON implements json.Marshaler.
func (r Agent) MarshalJSON() ([]byte, error) { return marshal(agentJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *Agent) UnmarshalJSON(b []byte) error { return unmarshal(b, (*agentJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r Agent) MarshalJSONTo(e *jsontext.Encoder) error { return encodeTo(e, agentJSON(r)) }

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *Agent) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*agentJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (r Originator) MarshalJSON() ([]byte, error) { return marshal(originatorJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *Originator) UnmarshalJSON(b []byte) error { return unmarshal(b, (*originatorJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r Originator) MarshalJSONTo(e *jsontext.Encoder) error {
	return encodeTo(e, originatorJSON(r))
}

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *Originator) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*originatorJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (r Company) MarshalJSON() ([]byte, error) { return marshal(companyJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *Company) UnmarshalJSON(b []byte) error { return unmarshal(b, (*companyJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r Company) MarshalJSONTo(e *jsontext.Encoder) error { return encodeTo(e, companyJSON(r)) }

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *Company) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*companyJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (r Loan) MarshalJSON() ([]byte, error) { return marshal(loanJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *Loan) UnmarshalJSON(b []byte) error { return unmarshal(b, (*loanJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r Loan) MarshalJSONTo(e *jsontext.Encoder) error { return encodeTo(e, loanJSON(r)) }

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *Loan) UnmarshalJSONFrom(d *jsontext.Decoder) error { return decodeFrom(d, (*loanJSON)(r)) }

// MarshalJSON implements json.Marshaler.
func (r Property) MarshalJSON() ([]byte, error) { return marshal(propertyJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *Property) UnmarshalJSON(b []byte) error { return unmarshal(b, (*propertyJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r Property) MarshalJSONTo(e *jsontext.Encoder) error { return encodeTo(e, propertyJSON(r)) }

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *Property) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*propertyJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (r Branch) MarshalJSON() ([]byte, error) { return marshal(branchJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *Branch) UnmarshalJSON(b []byte) error { return unmarshal(b, (*branchJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r Branch) MarshalJSONTo(e *jsontext.Encoder) error { return encodeTo(e, branchJSON(r)) }

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *Branch) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*branchJSON)(r))
}

// MarshalJSON implements json.Marshaler.
func (r Sale) MarshalJSON() ([]byte, error) { return marshal(saleJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *Sale) UnmarshalJSON(b []byte) error { return unmarshal(b, (*saleJSON)(r)) }

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r Sale) MarshalJSONTo(e *jsontext.Encoder) error { return encodeTo(e, saleJSON(r)) }

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *Sale) UnmarshalJSONFrom(d *jsontext.Decoder) error { return decodeFrom(d, (*saleJSON)(r)) }

// MarshalJSON implements json.Marshaler.
func (r MarketRecord) MarshalJSON() ([]byte, error) { return marshal(marketRecordJSON(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *MarketRecord) UnmarshalJSON(b []byte) error {
	return unmarshal(b, (*marketRecordJSON)(r))
}

// MarshalJSONTo implements the encoding/json/v2 MarshalerTo.
func (r MarketRecord) MarshalJSONTo(e *jsontext.Encoder) error {
	return encodeTo(e, marketRecordJSON(r))
}

// UnmarshalJSONFrom implements the encoding/json/v2 UnmarshalerFrom.
func (r *MarketRecord) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeFrom(d, (*marketRecordJSON)(r))
}
