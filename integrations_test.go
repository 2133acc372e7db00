package lendgraph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func agentIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("agt_%07d", i)
	}
	return ids
}

func TestIntegrationsService_PushCRM(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(300))
	c := srv.Client()
	ctx := context.Background()
	org := srv.DefaultCaller().OrgID
	before := srv.Credits(org)
	req := &lendgraph.PushCRMRequest{Entity: lendgraph.CRMEntityAgent, Object: lendgraph.CRMObjectContact, IDs: []string{"agt_0000001", "agt_0000002", "agt_9999999"}}
	// A dry run writes and charges nothing.
	dry := *req
	dry.DryRun = true
	d, err := c.Integrations.PushCRM(ctx, &dry)
	if err != nil || !d.DryRun || d.Billing.Charged != 0 || d.Summary.Created != 2 || srv.Credits(org) != before {
		t.Fatalf("%v %+v", err, d)
	}
	r1, err := c.Integrations.PushCRM(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Summary.Requested != 3 || r1.Summary.Created != 2 || r1.Summary.Skipped != 1 {
		t.Fatalf("%+v", r1.Summary)
	}
	if r1.Results[0].Status != lendgraph.PushCreated || r1.Results[2].Reason != lendgraph.PushNotFound || r1.Billing.Charged != 2 || !r1.PortalRecorded {
		t.Fatalf("%+v", r1)
	}
	// Existing records are matched and updated, not duplicated.
	r2, err := c.Integrations.PushCRM(ctx, req)
	if err != nil || r2.Summary.Updated != 2 || r2.Summary.Created != 0 || r2.Results[0].CRMRecordID != r1.Results[0].CRMRecordID || r2.Results[0].Status != lendgraph.PushUpdated {
		t.Fatalf("%v %+v", err, r2)
	}
	if got := before - srv.Credits(org); got != 4 {
		t.Fatalf("charged %v, want 4 (one per record written)", got)
	}
	for _, d := range srv.Debits(org) {
		if d.Reason != "crm-push" {
			t.Fatalf("debit %+v", d)
		}
	}
	st, err := c.Integrations.CRMStatus(ctx)
	if err != nil || !st.Connected || len(st.Objects) == 0 {
		t.Fatalf("%v %+v", err, st)
	}
}

func TestIntegrationsService_PushCRMValidation(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(10))
	c := srv.Client()
	ctx := context.Background()
	base := lendgraph.PushCRMRequest{Entity: lendgraph.CRMEntityAgent, Object: lendgraph.CRMObjectContact}
	for _, tc := range []struct {
		mut func(*lendgraph.PushCRMRequest)
		arg string
	}{
		{func(r *lendgraph.PushCRMRequest) { r.IDs = agentIDs(101) }, "IDs"},
		{func(r *lendgraph.PushCRMRequest) { r.IDs = nil }, "IDs"},
		{func(r *lendgraph.PushCRMRequest) { r.IDs = []string{"a", ""} }, "IDs[1]"},
		{func(r *lendgraph.PushCRMRequest) { r.IDs = []string{"a"}; r.Entity = "" }, "Entity"},
		{func(r *lendgraph.PushCRMRequest) { r.IDs = []string{"a"}; r.Object = "" }, "Object"},
	} {
		r := base
		tc.mut(&r)
		_, err := c.Integrations.PushCRM(ctx, &r)
		wantInvalid(t, srv, err, tc.arg)
	}
	// The {code, details, error} body of a refused push.
	r := base
	r.Entity, r.IDs = "spaceship", []string{"a"}
	_, err := c.Integrations.PushCRM(ctx, &r)
	var ve *lendgraph.ValidationError
	if !errors.As(err, &ve) || ve.Code != "invalid_request" || ve.Details["field"] != "entity" {
		t.Fatalf("%T %v", err, err)
	}
}

func TestIntegrationsService_PushCRMInsufficientCredits(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(300))
	srv.SetCredits(lendgraphtest.DefaultOrg, 1)
	c := srv.Client()
	_, err := c.Integrations.PushCRM(context.Background(), &lendgraph.PushCRMRequest{Entity: lendgraph.CRMEntityAgent, Object: lendgraph.CRMObjectContact, IDs: agentIDs(3)})
	var ic *lendgraph.InsufficientCreditsError
	if !errors.As(err, &ic) || ic.Balance != 1 || ic.Cost != 3 || !errors.Is(err, lendgraph.ErrInsufficientCredits) {
		t.Fatalf("%T %v", err, err)
	}
	if srv.Credits(lendgraphtest.DefaultOrg) != 1 {
		t.Fatal("charged despite 402")
	}
}

func TestIntegrationsService_PushCRMAll(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(300))
	c := srv.Client()
	res, err := c.Integrations.PushCRMBatched(context.Background(), &lendgraph.PushCRMRequest{Entity: lendgraph.CRMEntityAgent, Object: lendgraph.CRMObjectContact, IDs: agentIDs(250)})
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.CountRequests(http.MethodPost, "/v1/integrations/crm/push"); n != 3 {
		t.Fatalf("%d batches", n)
	}
	if len(res.Results) != 250 || res.Summary.Requested != 250 || res.Summary.Created != 250 || res.Billing.Charged != 250 || res.Results[249].ID != "agt_0000249" {
		t.Fatalf("%+v", res.Summary)
	}
}

func TestIntegrationsService_PushCRMAllStopsAt402(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(300))
	srv.SetCredits(lendgraphtest.DefaultOrg, 150)
	c := srv.Client()
	ids := agentIDs(250)
	res, err := c.Integrations.PushCRMBatched(context.Background(), &lendgraph.PushCRMRequest{Entity: lendgraph.CRMEntityAgent, Object: lendgraph.CRMObjectContact, IDs: ids})
	var pe *lendgraph.PushIncompleteError
	var ic *lendgraph.InsufficientCreditsError
	if !errors.As(err, &pe) || !errors.As(err, &ic) {
		t.Fatalf("%T %v", err, err)
	}
	if len(pe.Done.Results) != 100 || res != pe.Done || pe.Done.Summary.Created != 100 || len(pe.Unknown) != 0 || len(pe.NotSent) != 150 || pe.NotSent[0] != ids[100] {
		t.Fatalf("done %d unknown %d notSent %d", len(pe.Done.Results), len(pe.Unknown), len(pe.NotSent))
	}
	if n := srv.CountRequests(http.MethodPost, "/v1/integrations/crm/push"); n != 2 {
		t.Fatalf("%d requests: stopped late", n)
	}
}

func TestIntegrationsService_PushCRMAllNeverResendsUnknown(t *testing.T) {
	for _, f := range []lendgraphtest.Fault{
		{Kind: lendgraphtest.DropMidBody},                            // the server wrote; the answer was cut
		{Kind: lendgraphtest.Respond, Status: http.StatusBadGateway}, // a gateway failed; outcome unknown
	} {
		srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(300))
		c := srv.Client(lendgraph.WithMaxRetries(3))
		srv.InjectFault(http.MethodPost, "/v1/integrations/crm/push", f)
		ids := agentIDs(250)
		_, err := c.Integrations.PushCRMBatched(context.Background(), &lendgraph.PushCRMRequest{Entity: lendgraph.CRMEntityAgent, Object: lendgraph.CRMObjectContact, IDs: ids})
		var pe *lendgraph.PushIncompleteError
		if !errors.As(err, &pe) {
			t.Fatalf("%T %v", err, err)
		}
		if len(pe.Done.Results) != 0 || len(pe.Unknown) != 100 || pe.Unknown[0] != ids[0] || len(pe.NotSent) != 150 || pe.NotSent[0] != ids[100] {
			t.Fatalf("done %d unknown %d notSent %d", len(pe.Done.Results), len(pe.Unknown), len(pe.NotSent))
		}
		if n := srv.CountRequests(http.MethodPost, "/v1/integrations/crm/push"); n != 1 {
			t.Fatalf("fault %v: %d requests: a batch of unknown outcome was re-sent", f.Kind, n)
		}
	}
}

// A 429 means the server did not act: the push is retried, and charged once.
func TestIntegrationsService_PushCRMRetriesOnlyWhenNothingHappened(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(50))
	c := srv.Client()
	srv.InjectFault(http.MethodPost, "/v1/integrations/crm/push", lendgraphtest.Fault{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": "0"}})
	before := srv.Credits(lendgraphtest.DefaultOrg)
	res, err := c.Integrations.PushCRM(context.Background(), &lendgraph.PushCRMRequest{Entity: lendgraph.CRMEntityAgent, Object: lendgraph.CRMObjectContact, IDs: agentIDs(2)})
	if err != nil || res.Summary.Created != 2 {
		t.Fatalf("%v %+v", err, res)
	}
	if n := srv.CountRequests(http.MethodPost, "/v1/integrations/crm/push"); n != 2 || before-srv.Credits(lendgraphtest.DefaultOrg) != 2 {
		t.Fatalf("%d requests, charged %v", n, before-srv.Credits(lendgraphtest.DefaultOrg))
	}
}

func TestCRMPushResponse_KeepsUnknown(t *testing.T) {
	var r lendgraph.PushCRMResult
	in := `{"results":[{"id":"a","status":"merged","reason":"duplicate_email","crmRecordId":"9","attempts":2}],"summary":{"requested":1,"merged":1},"billing":{"charged":1,"note":"n","rate":1},"portalRecorded":true,"region":"eu"}`
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	if r.Results[0].Status != "merged" || r.Results[0].Reason != "duplicate_email" {
		t.Fatalf("%+v", r.Results[0])
	}
	out, _ := json.Marshal(r)
	for _, m := range []string{`"attempts":2`, `"merged":1`, `"rate":1`, `"region":"eu"`} {
		if !strings.Contains(string(out), m) {
			t.Fatalf("%s lost: %s", m, out)
		}
	}
}

// A push that names an id twice would write and charge the record twice:
// refused before any request.
func TestIntegrationsService_PushCRMDuplicateIDs(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(10))
	_, err := srv.Client().Integrations.PushCRM(context.Background(), &lendgraph.PushCRMRequest{
		Entity: lendgraph.CRMEntityAgent, Object: lendgraph.CRMObjectContact, IDs: []string{"agt_1", "agt_2", "agt_1"}})
	wantInvalid(t, srv, err, "IDs[2]")
}
