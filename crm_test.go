package lendgraph_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func TestCRMService_LenderChannels(t *testing.T) {
	srv := crmServer(t)
	c := srv.Client()
	by, err := c.CRM.LenderChannels(context.Background(), []string{"1000000", "1000001", "999"})
	if err != nil {
		t.Fatal(err)
	}
	if len(by) != 2 {
		t.Fatalf("%+v", by)
	}
	for id, ch := range by {
		switch ch.Channel {
		case lendgraph.ChannelBank, lendgraph.ChannelCreditUnion, lendgraph.ChannelBroker, lendgraph.ChannelRetail:
		default:
			t.Fatalf("%s: channel %q", id, ch.Channel)
		}
		if ch.CompanyName == "" || ch.CompanyNMLSID == "" {
			t.Fatalf("%+v", ch)
		}
	}
	srv.ResetRequests()
	_, err = c.CRM.LenderChannels(context.Background(), nil)
	wantInvalid(t, srv, err, "loNMLSIDs")
	var lc lendgraph.LenderChannel
	_ = json.Unmarshal([]byte(`{"channel":"Correspondent","tier":2}`), &lc)
	if lc.Channel != "Correspondent" || !lc.Extra.Has("tier") {
		t.Fatalf("%+v", lc)
	}
}

func TestCRM_ScopedToOrganization(t *testing.T) {
	srv := crmServer(t)
	ctx := context.Background()
	fx := srv.CRMFixtures(srv.DefaultCaller())
	mine, _ := srv.Client().CRM.Tasks(ctx, nil)
	ids := map[string]bool{}
	for _, tk := range mine {
		ids[tk.ID] = true
	}
	other := srv.Client(lendgraph.WithAPIKey(srv.NewCaller("org_other").Key))
	// The other organization has its own CRM (the same loan officers may be
	// in it), none of this one's tasks.
	tasks, err := other.CRM.Tasks(ctx, nil)
	if err != nil || len(tasks) == 0 {
		t.Fatal(err)
	}
	for _, tk := range tasks {
		if ids[tk.ID] {
			t.Fatalf("another org sees task %s", tk.ID)
		}
	}
	_, err = other.CRM.EditNote(ctx, fx.NoteID, "x")
	wantStatus(t, err, http.StatusNotFound)
	_, err = other.CRM.TranscribeCall(ctx, fx.CallID)
	wantStatus(t, err, http.StatusNotFound)
	_, err = other.CRM.UpdateMeeting(ctx, &lendgraph.UpdateMeetingRequest{ID: fx.MeetingID, Action: lendgraph.MeetingCancel})
	wantStatus(t, err, http.StatusNotFound)
	if _, err := other.CRM.DeleteRecords(ctx, fx.RecordIDs); err != nil {
		t.Fatal(err)
	}
	if again, _ := srv.Client().CRM.Tasks(ctx, nil); len(again) != len(mine) {
		t.Fatal("another org removed this org's records")
	}
	members, _ := other.CRM.OrgMembers(ctx, nil)
	for _, m := range members {
		if m.UserID == srv.DefaultCaller().UserID {
			t.Fatal("member of another org listed")
		}
	}
}

func TestCRMService_ShareRecord(t *testing.T) {
	srv := crmServer(t)
	ctx := context.Background()
	c := srv.Client()
	fx := srv.CRMFixtures(srv.DefaultCaller())
	mate := srv.NewCaller(lendgraphtest.DefaultOrg)
	mc := srv.Client(lendgraph.WithAPIKey(mate.Key))
	if ts, _ := mc.CRM.Tasks(ctx, &lendgraph.TasksRequest{EntityID: fx.RecordIDs[1]}); len(ts) != 0 {
		t.Fatal("teammate sees an unshared record")
	}
	// The teammate cannot share what it cannot see.
	_, err := mc.CRM.ShareRecord(ctx, fx.RecordIDs[1], mate.UserID)
	wantStatus(t, err, http.StatusNotFound)
	// Outsiders cannot be granted.
	outsider := srv.NewCaller("org_x")
	_, err = c.CRM.ShareRecord(ctx, fx.RecordIDs[1], outsider.UserID)
	wantStatus(t, err, http.StatusNotFound)
	g, err := c.CRM.ShareRecord(ctx, fx.RecordIDs[1], mate.UserID)
	if err != nil || !g.Granted {
		t.Fatalf("%v %+v", err, g)
	}
	if ts, _ := mc.CRM.Tasks(ctx, &lendgraph.TasksRequest{EntityID: fx.RecordIDs[1]}); len(ts) != 1 {
		t.Fatalf("teammate sees %d tasks after the share", len(ts))
	}
	// A shared record is not the teammate's to remove; the owner's is.
	rm, err := mc.CRM.DeleteRecords(ctx, []string{fx.RecordIDs[1]})
	if err != nil || len(rm.Skipped) != 1 {
		t.Fatalf("%v %+v", err, rm)
	}
	rm, err = c.CRM.DeleteRecords(ctx, []string{fx.RecordIDs[1], "missing"})
	if err != nil || len(rm.Removed) != 1 || rm.Removed[0] != fx.RecordIDs[1] || len(rm.Skipped) != 1 {
		t.Fatalf("%v %+v", err, rm)
	}
	if ts, _ := c.CRM.Tasks(ctx, &lendgraph.TasksRequest{EntityID: fx.RecordIDs[1]}); len(ts) != 0 {
		t.Fatal("tasks of a removed record remain")
	}
	srv.ResetRequests()
	_, err = c.CRM.DeleteRecords(ctx, nil)
	wantInvalid(t, srv, err, "entityIDs")
	_, err = c.CRM.ShareRecord(ctx, "", "u")
	wantInvalid(t, srv, err, "entityID, userID")
}

func TestCRMService_MeetingsCallsNotes(t *testing.T) {
	srv := crmServer(t)
	ctx := context.Background()
	c := srv.Client()
	fx := srv.CRMFixtures(srv.DefaultCaller())
	res, err := c.CRM.UpdateMeeting(ctx, &lendgraph.UpdateMeetingRequest{ID: fx.MeetingID, Action: lendgraph.MeetingUpdateAction, Fields: map[string]any{"title": "Moved"}})
	if err != nil || !res.Updated || res.NeedsConnect != lendgraph.CalendarGoogle {
		t.Fatalf("%v %+v", err, res)
	}
	body := string(srv.Requests()[0].Body)
	if !strings.Contains(body, `"title":"Moved"`) || !strings.Contains(body, `"action":"update"`) || srv.Requests()[0].Method != http.MethodPatch {
		t.Fatalf("body %s", body)
	}
	if res, err := c.CRM.UpdateMeeting(ctx, &lendgraph.UpdateMeetingRequest{ID: fx.MeetingID, Action: lendgraph.MeetingResync}); err != nil || res.Updated {
		t.Fatalf("%v %+v", err, res)
	}
	_, err = c.CRM.UpdateMeeting(ctx, &lendgraph.UpdateMeetingRequest{ID: fx.MeetingID, Action: "explode"})
	wantStatus(t, err, http.StatusBadRequest)

	call, err := c.CRM.TranscribeCall(ctx, fx.CallID)
	if err != nil {
		t.Fatal(err)
	}
	if len(call.Transcript) != 2 || call.Transcript[0].Speaker != lendgraph.SpeakerUser || call.Transcript[1].Speaker != "contact" ||
		call.AISentiment != lendgraph.SentimentPositive || len(call.AIActions) != 2 || call.AIActions[0].Type != lendgraph.AIActionTask ||
		call.AIActions[1].Type != "meeting" || call.TranscriptStatus != "completed" || call.AnsweredBy != "machine_end_beep" ||
		call.EndedBy != lendgraph.EndedByCaller || call.AIAnalyzedAt.IsZero() || call.DurationSeconds != 95 {
		t.Fatalf("%+v", call)
	}

	ed, err := c.CRM.EditNote(ctx, fx.NoteID, "<p>Updated</p>")
	if err != nil || !ed.Updated || ed.PreviousBodyHTML != "<p>Met at the expo</p>" || ed.EntityID != fx.RecordIDs[0] {
		t.Fatalf("%v %+v", err, ed)
	}
	srv.ResetRequests()
	_, err = c.CRM.UpdateMeeting(ctx, &lendgraph.UpdateMeetingRequest{Action: lendgraph.MeetingCancel})
	wantInvalid(t, srv, err, "ID")
	_, err = c.CRM.UpdateMeeting(ctx, &lendgraph.UpdateMeetingRequest{ID: "m"})
	wantInvalid(t, srv, err, "Action")
	_, err = c.CRM.TranscribeCall(ctx, "")
	wantInvalid(t, srv, err, "callID")
	_, err = c.CRM.EditNote(ctx, "", "x")
	wantInvalid(t, srv, err, "noteID")
}

func TestCRMService_OrgMembers(t *testing.T) {
	srv := crmServer(t)
	ctx := context.Background()
	c := srv.Client()
	srv.NewCaller(lendgraphtest.DefaultOrg)
	all, err := c.CRM.OrgMembers(ctx, nil)
	if err != nil || len(all) != 2 || all[0].Email == "" {
		t.Fatalf("%v %+v", err, all)
	}
	none, err := c.CRM.OrgMembers(ctx, &lendgraph.OrgMembersRequest{Limit: lendgraph.Ptr(0)})
	if err != nil || len(none) != 0 || !strings.Contains(srv.Requests()[1].Query, "limit=0") {
		t.Fatalf("%v %+v %q", err, none, srv.Requests()[1].Query)
	}
	one, err := c.CRM.OrgMembers(ctx, &lendgraph.OrgMembersRequest{Search: "default"})
	if err != nil || len(one) != 1 {
		t.Fatalf("%v %+v", err, one)
	}
	srv.ResetRequests()
	_, err = c.CRM.OrgMembers(ctx, &lendgraph.OrgMembersRequest{Limit: lendgraph.Ptr(-1)})
	wantInvalid(t, srv, err, "Limit")
	wantStatus(t, c.Do(ctx, http.MethodGet, "/v1/crm/org-members?limit=-1", nil, nil), http.StatusBadRequest)
}

func TestEpochMillis_Time(t *testing.T) {
	e := lendgraph.EpochMillis(1_700_000_000_123)
	if !e.Time().Equal(time.UnixMilli(1_700_000_000_123)) || e.String() != "2023-11-14T22:13:20.123Z" {
		t.Fatal(e.Time(), e.String())
	}
	var zero lendgraph.EpochMillis
	if !zero.Time().IsZero() || zero.String() != "" {
		t.Fatal("zero")
	}
	// Absent timestamps stay absent on re-marshal.
	var tk lendgraph.Task
	_ = json.Unmarshal([]byte(`{"id":"t","status":"snoozed","dueAt":1700000000000,"priority":"high"}`), &tk)
	out, _ := json.Marshal(tk)
	if strings.Contains(string(out), "completedAt") || !strings.Contains(string(out), `"priority":"high"`) || tk.Status != "snoozed" {
		t.Fatalf("%s", out)
	}
}
