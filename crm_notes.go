package lendgraph

import (
	"context"
	"net/http"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// EditNoteResult is the answer of EditNote.
type EditNoteResult struct {
	EntityID         string `json:"entityId"`
	PreviousBodyHTML string `json:"previousBodyHtml"`
	Updated          bool   `json:"updated"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// EditNote replaces a note's body (PATCH /v1/crm/activity). Setting the
// same body twice leaves the same note, so it is retried like a read.
func (s *CRMService) EditNote(ctx context.Context, noteID, body string, opts ...Option) (*EditNoteResult, error) {
	if err := requireID("noteID", noteID); err != nil {
		return nil, err
	}
	return call[EditNoteResult](ctx, s.client, "CRM.EditNote", opts, request{data: true, method: http.MethodPatch, path: "/v1/crm/activity",
		body: map[string]string{"id": noteID, "body": body}, kind: retry.Idempotent})
}
