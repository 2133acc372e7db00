package lendgraph

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// TaskStatus is a CRM task's status; other values are kept as sent.
type TaskStatus string

// Task statuses.
const (
	TaskOpen      TaskStatus = "open"
	TaskCompleted TaskStatus = "completed"
	TaskCancelled TaskStatus = "cancelled"
)

func (s TaskStatus) validate() error {
	switch s {
	case "", TaskOpen, TaskCompleted, TaskCancelled:
		return nil
	}
	return invalidArg("Status", "%q is not one of open, completed, cancelled", string(s))
}

// CalendarProvider names a calendar service; "google" is the one shown.
type CalendarProvider string

// CalendarGoogle is Google Calendar.
const CalendarGoogle CalendarProvider = "google"

// Task is a CRM task. The timestamps are EpochMillis (unit assumed).
type Task struct {
	ID               string           `json:"id"`
	ListID           string           `json:"listId"`
	EntityID         string           `json:"entityId"`
	Title            string           `json:"title"`
	Body             string           `json:"body"`
	Status           TaskStatus       `json:"status"`
	AllDay           bool             `json:"allDay"`
	AssigneeUserID   string           `json:"assigneeUserId"`
	CreatedByUserID  string           `json:"createdByUserId"`
	CalendarEventID  string           `json:"calendarEventId"`
	CalendarProvider CalendarProvider `json:"calendarProvider"`
	DueAt            EpochMillis      `json:"dueAt,omitzero"`
	CreatedAt        EpochMillis      `json:"createdAt,omitzero"`
	CompletedAt      EpochMillis      `json:"completedAt,omitzero"`
	CancelledAt      EpochMillis      `json:"cancelledAt,omitzero"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// EntityType is the kind of record a workspace task is on; "lo" (loan
// officer) is the one shown.
type EntityType string

// EntityLoanOfficer is a loan-officer record.
const EntityLoanOfficer EntityType = "lo"

// WorkspaceTask is a task of the cross-record inbox: a Task plus the record
// it is on.
type WorkspaceTask struct {
	ID               string           `json:"id"`
	ListID           string           `json:"listId"`
	EntityID         string           `json:"entityId"`
	Title            string           `json:"title"`
	Body             string           `json:"body"`
	Status           TaskStatus       `json:"status"`
	AllDay           bool             `json:"allDay"`
	AssigneeUserID   string           `json:"assigneeUserId"`
	CreatedByUserID  string           `json:"createdByUserId"`
	CalendarEventID  string           `json:"calendarEventId"`
	CalendarProvider CalendarProvider `json:"calendarProvider"`
	DueAt            EpochMillis      `json:"dueAt,omitzero"`
	CreatedAt        EpochMillis      `json:"createdAt,omitzero"`
	CompletedAt      EpochMillis      `json:"completedAt,omitzero"`
	CancelledAt      EpochMillis      `json:"cancelledAt,omitzero"`

	CanDelete      bool           `json:"canDelete"`
	EntityType     EntityType     `json:"entityType"`
	RecordName     string         `json:"recordName"`
	RecordSubtitle string         `json:"recordSubtitle"`
	Display        *TaskDisplay   `json:"display,omitempty"`
	Overrides      *TaskOverrides `json:"overrides,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// TaskDisplay describes the record a workspace task is on.
type TaskDisplay struct {
	BranchName       string      `json:"branchName"`
	BranchNMLSID     string      `json:"branchNmlsId"`
	CBSACode         string      `json:"cbsaCode"`
	City             string      `json:"city"`
	CompanyName      string      `json:"companyName"`
	CompanyNMLSID    string      `json:"companyNmlsId"`
	ContactCheckedAt EpochMillis `json:"contactCheckedAt,omitzero"`
	County           string      `json:"county"`
	CountyFIPS       string      `json:"countyFips"`
	// Location is kept as sent: its type is not shown by the reference.
	Location json.RawMessage `json:"location,omitempty"`
	Name     string          `json:"name"`
	State    string          `json:"state"`
	Subtitle string          `json:"subtitle"`
	Units    float64         `json:"units"`
	Volume   float64         `json:"volume"`
	Zip      string          `json:"zip"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// TaskOverrides are the user's overrides of a record's display. Office is
// typed; the string-valued entries are in Extra (decode with Extra.Decode).
type TaskOverrides struct {
	Office *OfficeOverride `json:"office,omitempty"`
	// Extra holds the other entries, as sent.
	Extra Fields `json:",unknown"`
}

// OfficeOverride is an office chosen by the user for a record.
type OfficeOverride struct {
	City  string  `json:"city"`
	Key   string  `json:"key"`
	Lat   float64 `json:"lat"`
	Lon   float64 `json:"lon"`
	Name  string  `json:"name"`
	State string  `json:"state"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// WorkspaceTasksRequest narrows the workspace inbox.
type WorkspaceTasksRequest struct {
	Status TaskStatus `url:"status,omitempty"`
	// Assignee is a user id; empty means anyone on the caller's records.
	Assignee string `url:"assignee,omitempty"`
}

// WorkspaceTasks lists tasks across every record the caller can see
// (GET /v1/crm/tasks/workspace).
func (s *CRMService) WorkspaceTasks(ctx context.Context, q *WorkspaceTasksRequest, opts ...Option) ([]WorkspaceTask, error) {
	if q != nil {
		if err := q.Status.validate(); err != nil {
			return nil, err
		}
	}
	out, err := call[[]WorkspaceTask](ctx, s.client, "CRM.WorkspaceTasks", opts, request{data: true, method: http.MethodGet, path: "/v1/crm/tasks/workspace", query: q, kind: retry.Idempotent})
	if err != nil {
		return nil, err
	}
	return *out, nil
}

// TaskOwnerMe is the owner filter value for the caller's own tasks.
const TaskOwnerMe = "me"

// TasksRequest narrows Tasks.
type TasksRequest struct {
	EntityID       string `url:"entityId,omitempty"`
	AssigneeUserID string `url:"assigneeUserId,omitempty"`
	// Owner is TaskOwnerMe or empty.
	Owner  string     `url:"owner,omitempty"`
	Status TaskStatus `url:"status,omitempty"`
}

// Tasks lists CRM tasks (GET /v1/crm/tasks).
func (s *CRMService) Tasks(ctx context.Context, q *TasksRequest, opts ...Option) ([]Task, error) {
	if q != nil {
		if err := q.Status.validate(); err != nil {
			return nil, err
		}
		if q.Owner != "" && q.Owner != TaskOwnerMe {
			return nil, invalidArg("Owner", "%q: the API takes only %q", q.Owner, TaskOwnerMe)
		}
	}
	out, err := call[[]Task](ctx, s.client, "CRM.Tasks", opts, request{data: true, method: http.MethodGet, path: "/v1/crm/tasks", query: q, kind: retry.Idempotent})
	if err != nil {
		return nil, err
	}
	return *out, nil
}

// MeetingAction is what UpdateMeeting does. Only "update" is spelled by
// the reference; the others are the SDK's reading of its list.
type MeetingAction string

// Meeting actions.
const (
	MeetingUpdateAction MeetingAction = "update"
	MeetingCancel       MeetingAction = "cancel"
	MeetingComplete     MeetingAction = "complete"
	MeetingResync       MeetingAction = "re-sync"
)

// UpdateMeetingRequest is the body of UpdateMeeting. ID and Action are required;
// Fields carries the other members (not shown by the reference), sent as
// given beside id and action.
type UpdateMeetingRequest struct {
	ID     string
	Action MeetingAction
	Fields map[string]any
}

// UpdateMeetingResult is the answer of UpdateMeeting. NeedsConnect names the
// calendar to connect when the change could not reach it.
type UpdateMeetingResult struct {
	NeedsConnect CalendarProvider `json:"needsConnect"`
	Updated      bool             `json:"updated"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// UpdateMeeting updates, cancels, completes or re-syncs a meeting
// (PATCH /v1/crm/meetings). It may write to the connected calendar, so it
// is not repeated after the server may have acted.
func (s *CRMService) UpdateMeeting(ctx context.Context, u *UpdateMeetingRequest, opts ...Option) (*UpdateMeetingResult, error) {
	if u == nil || u.ID == "" {
		return nil, invalidArg("ID", "the meeting id is required")
	}
	if u.Action == "" {
		return nil, invalidArg("Action", "is required: update, cancel, complete or re-sync")
	}
	body := map[string]any{}
	maps.Copy(body, u.Fields)
	body["id"], body["action"] = u.ID, u.Action
	return call[UpdateMeetingResult](ctx, s.client, "CRM.UpdateMeeting", opts, request{data: true, method: http.MethodPatch, path: "/v1/crm/meetings", body: body, kind: retry.Unrepeatable})
}

func requireID(arg, id string) error {
	if id == "" {
		return invalidArg(arg, "must not be empty")
	}
	return nil
}
