package lendgraph

// CRMService serves the CRM features: tasks, meetings, calls, notes, record
// shares and removal, organization members, lender channels.
type CRMService struct {
	client *Client
}

// IntegrationsService sends records to a connected external CRM.
type IntegrationsService struct {
	client *Client
}
