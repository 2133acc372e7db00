package lendgraph

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Person is an owner found by enrichment.
type Person struct {
	Name         PersonName    `json:"name"`
	PhoneNumbers []PhoneNumber `json:"phoneNumbers"`
	Emails       []Email       `json:"emails"`
	// PropertyAddress and MailingAddress are nil when absent.
	PropertyAddress *Address `json:"propertyAddress,omitempty"`
	MailingAddress  *Address `json:"mailingAddress,omitempty"`
	// DNC, Litigator and Death are the person's flags as sent at the top
	// of the record, in whatever form (boolean, "Y"/"N", an object). Their
	// type and placement are not documented: use Flags, which also looks
	// for them one level down (e.g. {"flags": {"litigator": "Y"}}).
	DNC       Flag `json:"dnc,omitzero"`
	Litigator Flag `json:"litigator,omitzero"`
	Death     Flag `json:"death,omitzero"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// PersonName is a person's name.
type PersonName struct {
	First string `json:"first,omitempty"`
	Last  string `json:"last,omitempty"`
	Full  string `json:"full,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// PhoneNumber is one phone number of a person.
type PhoneNumber struct {
	// Number is in international format, e.g. +14155550100.
	Number string `json:"number"`
	// Type is the line type as sent; its values are not documented
	// (mobile, landline, voip are likely).
	Type      string  `json:"type,omitempty"`
	Reachable bool    `json:"reachable"`
	DNC       bool    `json:"dnc"`
	Score     float64 `json:"score"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// Email is one email address of a person.
type Email struct {
	Email string `json:"email"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// Address is a postal address.
type Address struct {
	Street string `json:"street,omitempty"`
	City   string `json:"city,omitempty"`
	State  string `json:"state,omitempty"`
	Zip    string `json:"zip,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// PersonFlags are a person's compliance flags, wherever the server put them.
type PersonFlags struct {
	DNC, Litigator, Death bool
}

// Flags returns the person's dnc, litigator and death flags: the top-level
// members when present, otherwise the first object member of the record
// that holds them (e.g. "flags" or "compliance"). Names match case
// insensitively, and "deceased" counts as death.
func (p Person) Flags() PersonFlags {
	f := PersonFlags{DNC: p.DNC.Value, Litigator: p.Litigator.Value, Death: p.Death.Value}
	have := [3]bool{p.DNC.Present(), p.Litigator.Present(), p.Death.Present()}
	for _, raw := range p.Extra.All() {
		if kindOf(raw) != '{' {
			continue
		}
		var m map[string]Flag
		if unmarshal(raw, &m) != nil {
			continue
		}
		for k, v := range m {
			switch strings.ToLower(k) {
			case "dnc", "donotcall":
				if !have[0] {
					f.DNC, have[0] = v.Value, true
				}
			case "litigator":
				if !have[1] {
					f.Litigator, have[1] = v.Value, true
				}
			case "death", "deceased":
				if !have[2] {
					f.Death, have[2] = v.Value, true
				}
			}
		}
	}
	return f
}

// Flag is a yes/no flag whose wire form is not documented. It decodes,
// without failing, a boolean, a string ("true", "Y", "yes", "1" and their
// opposites), a number (non-zero is set), or an object holding one of
// those under "value", "flag", "status", "active" or as its only member.
// Raw keeps the member as sent and is what it marshals back to.
type Flag struct {
	// Value is the flag as far as it could be read; false when unreadable.
	Value bool
	// Raw is the JSON as sent; empty when the member was absent.
	Raw json.RawMessage
}

// Present reports whether the server sent the flag (null counts as absent).
func (f Flag) Present() bool { return len(f.Raw) > 0 && kindOf(f.Raw) != 'n' }

// IsZero reports an absent flag, so omitzero drops it.
func (f Flag) IsZero() bool { return len(f.Raw) == 0 && !f.Value }

// MarshalJSON writes the flag as it was sent, or a boolean.
func (f Flag) MarshalJSON() ([]byte, error) {
	if len(f.Raw) > 0 {
		return bytes.Clone(f.Raw), nil
	}
	return strconv.AppendBool(nil, f.Value), nil
}

// UnmarshalJSON reads any of the forms listed on Flag; it never fails on
// valid JSON.
func (f *Flag) UnmarshalJSON(b []byte) error {
	f.Raw = json.RawMessage(bytes.Clone(bytes.TrimSpace(b)))
	f.Value = flagValue(f.Raw, 0)
	return nil
}

func flagValue(raw json.RawMessage, depth int) bool {
	switch kindOf(raw) {
	case 't':
		return true
	case '"':
		var s string
		if unmarshal(raw, &s) != nil {
			return false
		}
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "t", "y", "yes", "1", "x":
			return true
		}
		return false
	case '0':
		n, err := strconv.ParseFloat(string(raw), 64)
		return err == nil && n != 0
	case '{':
		if depth > 2 {
			return false
		}
		var m map[string]json.RawMessage
		if unmarshal(raw, &m) != nil {
			return false
		}
		for _, k := range []string{"value", "flag", "status", "active"} {
			if v, ok := m[k]; ok {
				return flagValue(v, depth+1)
			}
		}
		if len(m) == 1 {
			for _, v := range m {
				return flagValue(v, depth+1)
			}
		}
	}
	return false
}
