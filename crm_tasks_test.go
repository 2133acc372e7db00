package lendgraph_test

import (
	"context"
	"strings"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

func TestCRMService_Tasks(t *testing.T) {
	srv := crmServer(t)
	c := srv.Client()
	ctx := context.Background()
	me := srv.DefaultCaller()
	fx := srv.CRMFixtures(me)
	tasks, err := c.CRM.Tasks(ctx, &lendgraph.TasksRequest{Owner: lendgraph.TaskOwnerMe, Status: lendgraph.TaskOpen})
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 3 {
		t.Fatalf("%d open tasks", len(tasks))
	}
	tk := tasks[0]
	if tk.Status != lendgraph.TaskOpen || tk.AssigneeUserID != me.UserID || tk.CalendarProvider != lendgraph.CalendarGoogle {
		t.Fatalf("%+v", tk)
	}
	// Timestamps read as epoch milliseconds (an assumption of the SDK).
	if d := time.Until(tk.DueAt.Time()); d < 0 || d > 4*24*time.Hour || !tk.CompletedAt.IsZero() {
		t.Fatalf("dueAt %v (%v)", tk.DueAt.Time(), d)
	}
	q := srv.Requests()[0].Query
	if !strings.Contains(q, "owner=me") || !strings.Contains(q, "status=open") {
		t.Fatalf("query %q", q)
	}
	byEntity, err := c.CRM.Tasks(ctx, &lendgraph.TasksRequest{EntityID: fx.RecordIDs[0]})
	if err != nil || len(byEntity) != 2 {
		t.Fatalf("%v %d", err, len(byEntity))
	}
	ws, err := c.CRM.WorkspaceTasks(ctx, &lendgraph.WorkspaceTasksRequest{Status: lendgraph.TaskCompleted})
	if err != nil || len(ws) != 1 {
		t.Fatalf("%v %d", err, len(ws))
	}
	w := ws[0]
	if w.EntityType != lendgraph.EntityLoanOfficer || w.RecordName == "" || w.Display == nil || w.Display.CompanyName == "" ||
		w.Overrides == nil || w.Overrides.Office == nil || !w.Overrides.Extra.Has("phone") || !w.CanDelete || w.CompletedAt.Time().IsZero() {
		t.Fatalf("%+v", w)
	}
	srv.ResetRequests()
	_, err = c.CRM.Tasks(ctx, &lendgraph.TasksRequest{Status: "done"})
	wantInvalid(t, srv, err, "Status")
	_, err = c.CRM.Tasks(ctx, &lendgraph.TasksRequest{Owner: "you"})
	wantInvalid(t, srv, err, "Owner")
	_, err = c.CRM.WorkspaceTasks(ctx, &lendgraph.WorkspaceTasksRequest{Status: "later"})
	wantInvalid(t, srv, err, "Status")
}
