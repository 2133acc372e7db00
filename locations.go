package lendgraph

// LocationsService is location autocomplete and retrieval.
type LocationsService struct {
	client *Client
}
