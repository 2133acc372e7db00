package lendgraph

// Agent is an agent summary or complete record.
type Agent struct {
	ID               string `json:"id"`
	FullName         string `json:"fullName,omitempty"`
	City             string `json:"city,omitempty"`
	State            string `json:"state,omitempty"`
	TransactionCount int64  `json:"transactionCount,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// AgentsService serves agents: records, analytics and bulk delivery. Its
// methods are in services_gen.go.
type AgentsService struct {
	r resource[Agent]
}
