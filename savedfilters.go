package lendgraph

// SavedFiltersService serves saved filters and saved CRM views.
type SavedFiltersService struct {
	client *Client
}
