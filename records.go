package lendgraph

import "encoding/json"

// Originator is a loan originator (loan officer) record.
type Originator struct {
	ID        string `json:"id"`
	NMLSID    string `json:"nmlsId,omitempty"`
	FirstName string `json:"firstName,omitempty"`
	LastName  string `json:"lastName,omitempty"`
	City      string `json:"city,omitempty"`
	State     string `json:"state,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// Company is a lender or brokerage company record.
type Company struct {
	ID     string `json:"id"`
	Name   string `json:"name,omitempty"`
	NMLSID string `json:"nmlsId,omitempty"`
	City   string `json:"city,omitempty"`
	State  string `json:"state,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// TransactionType is a loan's transaction type; the reference shows
// "purchase", other values are kept as sent.
type TransactionType string

// TransactionPurchase is the purchase transaction type.
const TransactionPurchase TransactionType = "purchase"

// Loan is a loan (recorded deed) record.
type Loan struct {
	ID              string          `json:"id"`
	State           string          `json:"state,omitempty"`
	MortgageAmount  float64         `json:"mortgageAmount,omitempty"`
	MortgageDate    string          `json:"mortgageDate,omitempty"`
	TransactionType TransactionType `json:"transactionType,omitempty"`
	InterestRate    float64         `json:"interestRate,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// Property is a parcel.
type Property struct {
	ID    string `json:"id"`
	City  string `json:"city,omitempty"`
	State string `json:"state,omitempty"`
	Zip   string `json:"zip,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// GeoPoint is a latitude and longitude.
type GeoPoint struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// Branch is a company branch office.
type Branch struct {
	ID             string    `json:"id"`
	BranchNMLSID   string    `json:"branchNmlsId,omitempty"`
	Name           string    `json:"name,omitempty"`
	CompanyName    string    `json:"companyName,omitempty"`
	CompanyNMLSID  string    `json:"companyNmlsId,omitempty"`
	Street         string    `json:"street,omitempty"`
	City           string    `json:"city,omitempty"`
	State          string    `json:"state,omitempty"`
	PostalCode     string    `json:"postalCode,omitempty"`
	IsAuthorized   bool      `json:"isAuthorized,omitempty"`
	LicensedStates []string  `json:"licensedStates,omitempty"`
	Location       *GeoPoint `json:"location,omitempty"`
	TradeNames     []string  `json:"tradeNames,omitempty"`
	// Managers is kept as sent: its shape is not shown by the reference.
	Managers json.RawMessage `json:"managers,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// Sale is a property sale record.
type Sale struct {
	ID string `json:"id"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// MarketRecord is a market data record.
type MarketRecord struct {
	ID string `json:"id"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}
