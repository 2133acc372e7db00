package lendgraph

// Count is an exact count. The reference does not show the body of the
// property and lender counts; the SDK reads total, and keeps the rest.
type Count struct {
	Total int64 `json:"total"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// countBody is a list request without pagination and sort, which counts ignore.
func countBody(req *ListRequest) (*ListRequest, error) {
	body, err := req.prepared()
	if err != nil {
		return nil, err
	}
	body.Pagination, body.Sort = nil, nil
	return body, nil
}
