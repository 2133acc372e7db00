package lendgraph

import (
	"context"
	"net/http"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// Values of the call record's enumerated fields: only one of each is shown
// by the reference; any other value is kept as sent.
type (
	// AnsweredBy says who answered a call ("human" shown).
	AnsweredBy string
	// EndedBy says who ended a call ("caller" shown).
	EndedBy string
	// TranscriptStatus is a call transcript's state ("pending" shown).
	TranscriptStatus string
	// Speaker is who said a transcript line ("user" shown).
	Speaker string
	// Sentiment is the AI's reading of a call ("positive" shown).
	Sentiment string
	// AIActionType is the kind of a suggested follow-up ("task" shown).
	AIActionType string
)

// Known values of the call record's enumerations.
const (
	AnsweredByHuman   AnsweredBy       = "human"
	EndedByCaller     EndedBy          = "caller"
	TranscriptPending TranscriptStatus = "pending"
	SpeakerUser       Speaker          = "user"
	SentimentPositive Sentiment        = "positive"
	AIActionTask      AIActionType     = "task"
)

// Call is a CRM call record. Timestamps are EpochMillis (unit assumed).
type Call struct {
	ID               string           `json:"id"`
	OrganizationID   string           `json:"organizationId"`
	EntityID         string           `json:"entityId"`
	UserID           string           `json:"userId"`
	FromNumber       string           `json:"fromNumber"`
	ToNumber         string           `json:"toNumber"`
	Status           string           `json:"status"`
	ProviderCallSID  string           `json:"providerCallSid"`
	RecordingSID     string           `json:"recordingSid"`
	TranscriptSID    string           `json:"transcriptSid"`
	RecordingEnabled bool             `json:"recordingEnabled"`
	StartedAt        EpochMillis      `json:"startedAt,omitzero"`
	EndedAt          EpochMillis      `json:"endedAt,omitzero"`
	CreatedAt        EpochMillis      `json:"createdAt,omitzero"`
	AIAnalyzedAt     EpochMillis      `json:"aiAnalyzedAt,omitzero"`
	DurationSeconds  float64          `json:"durationSeconds"`
	AnsweredBy       AnsweredBy       `json:"answeredBy"`
	EndedBy          EndedBy          `json:"endedBy"`
	TranscriptStatus TranscriptStatus `json:"transcriptStatus"`
	Transcript       []TranscriptLine `json:"transcript"`
	AILabel          string           `json:"aiLabel"`
	AISummary        string           `json:"aiSummary"`
	AISentiment      Sentiment        `json:"aiSentiment"`
	AIActions        []AIAction       `json:"aiActions"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// TranscriptLine is one line of a call transcript.
type TranscriptLine struct {
	Speaker Speaker `json:"speaker"`
	Text    string  `json:"text"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// AIAction is a follow-up the AI suggests after a call.
type AIAction struct {
	Type            AIActionType `json:"type"`
	Title           string       `json:"title"`
	DueInDays       float64      `json:"dueInDays"`
	DurationMinutes float64      `json:"durationMinutes"`
	StartInDays     float64      `json:"startInDays"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// TranscribeCall transcribes a recorded call that was skipped as voicemail
// (POST /v1/crm/calls/transcript) and returns the call record. It starts
// paid provider work, so it is not repeated after the server may have acted.
func (s *CRMService) TranscribeCall(ctx context.Context, callID string, opts ...Option) (*Call, error) {
	if err := requireID("callID", callID); err != nil {
		return nil, err
	}
	return call[Call](ctx, s.client, "CRM.TranscribeCall", opts, request{data: true, method: http.MethodPost, path: "/v1/crm/calls/transcript",
		body: map[string]string{"id": callID}, kind: retry.Unrepeatable})
}
