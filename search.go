package lendgraph

// SearchService is instant search: the API route, the search token, and the
// search host.
type SearchService struct {
	client *Client
}
