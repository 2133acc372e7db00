package lendgraph

//go:generate sh internal/gen/surface_json.sh

import (
	"context"
)

// dataEnvelope is the {data: ...} wrapper of the CRM, saved-filter and
// lender-channel answers.
type dataEnvelope[T any] struct {
	Data T `json:"data"`
}

// sendData runs r and returns the decoded data member of the answer.
func sendData[T any](ctx context.Context, c *Client, r request) (*T, error) {
	var env dataEnvelope[T]
	if _, err := c.send(ctx, r, &env); err != nil {
		return nil, err
	}
	return &env.Data, nil
}

// sendAs runs r and returns the decoded answer.
func sendAs[T any](ctx context.Context, c *Client, r request) (*T, error) {
	var out T
	if _, err := c.send(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Ptr returns a pointer to v, for optional fields where the zero value is
// meaningful (OrgMembersQuery.Limit: lendgraph.Ptr(0)).
func Ptr[T any](v T) *T { return &v }
