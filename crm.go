package lendgraph

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// CRMAPI is what c.CRM offers.
type CRMAPI interface {
	LenderChannels(ctx context.Context, loNMLSIDs []string, opts ...Option) (map[string]LenderChannel, error)
	WorkspaceTasks(ctx context.Context, q *WorkspaceTasksRequest, opts ...Option) ([]WorkspaceTask, error)
	Tasks(ctx context.Context, q *TasksRequest, opts ...Option) ([]Task, error)
	UpdateMeeting(ctx context.Context, u *UpdateMeetingRequest, opts ...Option) (*UpdateMeetingResult, error)
	TranscribeCall(ctx context.Context, callID string, opts ...Option) (*Call, error)
	EditNote(ctx context.Context, noteID, body string, opts ...Option) (*EditNoteResult, error)
	ShareRecord(ctx context.Context, entityID, userID string, opts ...Option) (*ShareRecordResult, error)
	DeleteRecords(ctx context.Context, entityIDs []string, opts ...Option) (*DeleteRecordsResult, error)
	OrgMembers(ctx context.Context, q *OrgMembersRequest, opts ...Option) ([]OrgMember, error)
}

var _ CRMAPI = (*CRMService)(nil)

// CRMService serves the CRM features: tasks, meetings, calls, notes, record
// shares and removal, organization members, lender channels. Everything is
// scoped to the active organization and the caller's visibility.
type CRMService struct {
	client *Client
}

// EpochMillis is a CRM timestamp. The reference does not show the unit of
// the numeric timestamps; the SDK reads them as milliseconds since the Unix
// epoch (an assumption). The number is kept as sent either way.
type EpochMillis float64

// Time returns the timestamp as a time, reading it as epoch milliseconds.
// The zero value gives the zero time.
func (e EpochMillis) Time() time.Time {
	if e == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(e)).UTC()
}

// IsZero reports whether the timestamp is absent or zero.
func (e EpochMillis) IsZero() bool { return e == 0 }

// String formats the timestamp as RFC 3339 (empty when zero).
func (e EpochMillis) String() string {
	if e == 0 {
		return ""
	}
	return e.Time().Format(time.RFC3339Nano)
}

// Channel classifies a lender: bank, credit union, broker or retail. Only
// "Bank" is spelled by the reference; the other constants are the SDK's
// guesses, and any value the server sends is kept as sent.
type Channel string

// Lender channels.
const (
	ChannelBank        Channel = "Bank"
	ChannelCreditUnion Channel = "Credit Union"
	ChannelBroker      Channel = "Broker"
	ChannelRetail      Channel = "Retail"
)

// LenderChannel is the channel of a loan officer's company.
type LenderChannel struct {
	Channel       Channel `json:"channel"`
	CompanyName   string  `json:"companyName"`
	CompanyNMLSID string  `json:"companyNmlsId"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// LenderChannels looks up the company channel of loan officers by NMLS id
// (POST /v1/crm/lender-channels). The map is keyed by loan-officer NMLS
// id; officers the server does not know are absent. It is a lookup: safe
// to retry.
func (s *CRMService) LenderChannels(ctx context.Context, loNMLSIDs []string, opts ...Option) (map[string]LenderChannel, error) {
	if len(loNMLSIDs) == 0 {
		return nil, invalidArg("loNMLSIDs", "name at least one loan-officer NMLS id")
	}
	for i, id := range loNMLSIDs {
		if id == "" {
			return nil, invalidArg(fmt.Sprintf("loNMLSIDs[%d]", i), "must not be empty")
		}
	}
	out, err := call[struct {
		ByLO map[string]LenderChannel `json:"byLo"`
	}](ctx, s.client, "CRM.LenderChannels", opts, request{data: true, method: http.MethodPost, path: "/v1/crm/lender-channels",
		body: map[string]any{"loNmlsIds": loNMLSIDs}, kind: retry.Idempotent})
	if err != nil {
		return nil, err
	}
	return out.ByLO, nil
}

// ShareRecordResult is the answer of ShareRecord.
type ShareRecordResult struct {
	Granted bool `json:"granted"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// ShareRecord lets another member of the organization see a CRM record
// (POST /v1/crm/record-shares). Granting the same share twice leaves the
// same state, so it is retried like a read.
func (s *CRMService) ShareRecord(ctx context.Context, entityID, userID string, opts ...Option) (*ShareRecordResult, error) {
	if entityID == "" || userID == "" {
		return nil, invalidArg("entityID, userID", "both are required")
	}
	return call[ShareRecordResult](ctx, s.client, "CRM.ShareRecord", opts, request{data: true, method: http.MethodPost, path: "/v1/crm/record-shares",
		body: map[string]string{"entityId": entityID, "userId": userID}, kind: retry.Idempotent})
}

// DeleteRecordsResult is the answer of DeleteRecords: the ids removed and the ids
// skipped (not found, or not the caller's to remove).
type DeleteRecordsResult struct {
	Removed []string `json:"removed"`
	Skipped []string `json:"skipped"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// DeleteRecords removes CRM records (POST /v1/crm/records/delete). It is
// not repeated after the server may have acted: a repeat would report the
// records removed by the first attempt as skipped.
func (s *CRMService) DeleteRecords(ctx context.Context, entityIDs []string, opts ...Option) (*DeleteRecordsResult, error) {
	if len(entityIDs) == 0 {
		return nil, invalidArg("entityIDs", "name at least one record id")
	}
	for i, id := range entityIDs {
		if id == "" {
			return nil, invalidArg(fmt.Sprintf("entityIDs[%d]", i), "must not be empty")
		}
	}
	return call[DeleteRecordsResult](ctx, s.client, "CRM.DeleteRecords", opts, request{data: true, method: http.MethodPost, path: "/v1/crm/records/delete",
		body: map[string]any{"entityIds": entityIDs}, kind: retry.Unrepeatable})
}

// OrgMember is a member of the caller's organization.
type OrgMember struct {
	UserID string `json:"userId"`
	Name   string `json:"name"`
	Email  string `json:"email"`
	Image  string `json:"image"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// OrgMembersRequest narrows OrgMembers.
type OrgMembersRequest struct {
	// Search matches member names and emails.
	Search string `url:"search,omitempty"`
	// Limit caps the members returned, at least 0; nil lets the server
	// choose. Use lendgraph.Ptr(0) to send an explicit 0.
	Limit *int `url:"limit,omitempty"`
}

// OrgMembers lists members of the caller's organization
// (GET /v1/crm/org-members).
func (s *CRMService) OrgMembers(ctx context.Context, q *OrgMembersRequest, opts ...Option) ([]OrgMember, error) {
	if q != nil && q.Limit != nil && *q.Limit < 0 {
		return nil, invalidArg("Limit", "%d is negative; use 0 or more", *q.Limit)
	}
	out, err := call[struct {
		Members []OrgMember `json:"members"`
	}](ctx, s.client, "CRM.OrgMembers", opts, request{data: true, method: http.MethodGet, path: "/v1/crm/org-members", query: q, kind: retry.Idempotent})
	if err != nil {
		return nil, err
	}
	return out.Members, nil
}
