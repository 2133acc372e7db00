package lendgraph_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// agentRow is every member of the fake's agent summary, typed: the row
// type a data engineer declares for a delivery.
type agentRow struct {
	ID                  string  `json:"id"`
	FirstName           string  `json:"firstName"`
	LastName            string  `json:"lastName"`
	FullName            string  `json:"fullName"`
	Email               string  `json:"email"`
	Phone               string  `json:"phone"`
	City                string  `json:"city"`
	State               string  `json:"state"`
	Zip                 string  `json:"zip"`
	Brokerage           string  `json:"brokerage"`
	TransactionCount    int64   `json:"transactionCount"`
	Volume              float64 `json:"volume"`
	LastTransactionDate string  `json:"lastTransactionDate"`
	LicenseNumber       string  `json:"licenseNumber"`
	IsTeamLead          bool    `json:"isTeamLead"`
	Office              struct {
		Name  string `json:"name"`
		City  string `json:"city"`
		State string `json:"state"`
	} `json:"office"`
	Tags []string `json:"tags"`
}

func TestDeliveryJob_RowsEveryFormat(t *testing.T) {
	srv, c := newDeliveryServer(t)
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 5000})
	ctx := context.Background()
	sortDesc := []lendgraph.Sort{{Field: "transactionCount", Order: lendgraph.Desc}}
	want := collect(t, c.Agents.All(ctx, &lendgraph.ListRequest{Sort: sortDesc, Pagination: &lendgraph.Pagination{Size: 100}}))
	var typed [][]agentRow
	for _, f := range allFormats {
		job, st := deliver(t, c, &lendgraph.DeliveryRequest{Sort: sortDesc, Format: f})
		if st.Format != f || st.Processed != 3000 || st.Bytes <= 0 || *st.ChargedCount != 3000 {
			t.Fatalf("%s status: %+v", f, st)
		}
		agents := collect(t, jobRows(ctx, job, f))
		if len(agents) != len(want) {
			t.Fatalf("%s: %d rows, want %d", f, len(agents), len(want))
		}
		for i := range want {
			a, w := agents[i], want[i]
			if a.ID != w.ID || a.FullName != w.FullName || a.City != w.City || a.State != w.State || a.TransactionCount != w.TransactionCount {
				t.Fatalf("%s row %d: %+v, want %+v", f, i, a, w)
			}
			if f != lendgraph.FormatCSV && !cmp.Equal(a.Extra, w.Extra) {
				t.Fatalf("%s row %d extra: %s", f, i, cmp.Diff(w.Extra, a.Extra))
			}
			if f == lendgraph.FormatCSV {
				sameExtra(t, i, w.Extra, a.Extra)
			}
		}
		typed = append(typed, collect(t, jobRows(ctx, lendgraph.DeliveryJobAs[agentRow](job), f)))
	}
	for i := 1; i < len(typed); i++ {
		if d := cmp.Diff(typed[0], typed[i]); d != "" {
			t.Fatalf("%s rows differ from ndjson: %s", allFormats[i], d)
		}
	}
	if typed[0][0].Office.City == "" || len(typed[0][0].Tags) == 0 {
		t.Fatalf("nested fields not decoded: %+v", typed[0][0])
	}
}

// wireRow types the fake's numeric agent members and keeps every other
// member in Extra. csv carries no number type and the API sends text made
// of digits (zips such as "75001"), so an undeclared numeric column of a
// csv file stays text; every other member (text, booleans, objects,
// arrays) is the same JSON value in every format.
type wireRow struct {
	ID               string           `json:"id"`
	TransactionCount int64            `json:"transactionCount"`
	Volume           float64          `json:"volume"`
	Extra            lendgraph.Fields `json:",unknown"`
}

// TestDeliveryJob_RowsMarshalAlike: one query delivered in each format
// gives rows that marshal to the same JSON, nested members (office, tags)
// and booleans (isTeamLead) kept in Extra included. A member a row lacks
// (some agents have no state) is absent in ndjson and json and null in csv
// (an empty cell), which has a column for every row: all three marshal
// alike once null members are dropped (Decode leaves the zero value for
// both); parquet's case, in the parquet module, marshals as csv. 1,000 rows:
// past the csv decoder's first batch of 512, on which it decides which
// columns are boolean.
func TestDeliveryJob_RowsMarshalAlike(t *testing.T) {
	_, c := newDeliveryServer(t)
	ctx := context.Background()
	marshal := func(r wireRow) string {
		extra, err := r.Extra.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf(`{"id":%q,"transactionCount":%d,"volume":%v} + %s`, r.ID, r.TransactionCount, r.Volume, extra)
	}
	var raw, noNull [][]string
	for _, f := range allFormats {
		job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: f, Limit: 1000,
			Sort: []lendgraph.Sort{{Field: "transactionCount", Order: lendgraph.Desc}}})
		var as, ns []string
		for _, r := range collect(t, jobRows(ctx, lendgraph.DeliveryJobAs[wireRow](job), f)) {
			as = append(as, marshal(r))
			for name, v := range r.Extra.All() {
				if string(v) == "null" {
					r.Extra.Delete(name)
				}
			}
			ns = append(ns, marshal(r))
		}
		if len(as) != 1000 {
			t.Fatalf("%s: %d rows", f, len(as))
		}
		raw, noNull = append(raw, as), append(noNull, ns)
	}
	for _, member := range []string{`"office":{`, `"tags":[`, `"isTeamLead":false`} {
		if !strings.Contains(raw[0][0], member) {
			t.Fatalf("ndjson row 1 has no %s: %s", member, raw[0][0])
		}
	}
	same := func(rows [][]string, a, b int) {
		for k := range rows[a] {
			if rows[a][k] != rows[b][k] {
				t.Errorf("%s row %d marshals to\n%s\n%s's to\n%s", allFormats[b], k+1, rows[b][k], allFormats[a], rows[a][k])
				return
			}
		}
	}
	same(raw, 0, 1) // json as ndjson
	for i := 1; i < len(allFormats); i++ {
		same(noNull, 0, i)
	}
}

func TestDeliveryService_DeliverValidates(t *testing.T) {
	srv, c := newDeliveryServer(t)
	ctx := context.Background()
	cases := map[string]*lendgraph.DeliveryRequest{
		"nil":          nil,
		"no format":    {},
		"bad format":   {Format: "xlsx"},
		"neg limit":    {Format: lendgraph.FormatCSV, Limit: -1},
		"empty field":  {Format: lendgraph.FormatCSV, Fields: []string{"id", " "}},
		"both filters": {Format: lendgraph.FormatCSV, FlatFilters: map[string]any{"state": "CA"}, AdvancedFilters: lendgraph.Eq("state", "CA")},
		"sort field":   {Format: lendgraph.FormatCSV, Sort: []lendgraph.Sort{{}}},
	}
	for name, req := range cases {
		_, err := c.Agents.Deliver(ctx, req)
		var ia *lendgraph.InvalidArgumentError
		if !errors.As(err, &ia) {
			t.Errorf("%s: %v, want *InvalidArgumentError", name, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func TestDeliveryService_DeliverEntitlementAndCeilings(t *testing.T) {
	srv, c := newDeliveryServer(t)
	ctx := context.Background()
	org := lendgraphtest.DefaultOrg
	// Without the entitlement: above 1,000 rows is 403 entitlement_missing.
	_, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV})
	var ent *lendgraph.EntitlementError
	if !errors.As(err, &ent) || ent.EntitlementKey != "bulk-delivery.agents" || ent.EstimatedTotal != 3000 || ent.MaxRows != 1000 {
		t.Fatalf("no entitlement: %v", err)
	}
	// ... a limit above the ceiling is refused, at or below it is fine.
	_, err = c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 1001})
	var api *lendgraph.APIError
	if !errors.As(err, &api) || api.StatusCode != 400 {
		t.Fatalf("limit above ceiling: %v", err)
	}
	job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 1000})
	if err != nil || job.EstimatedTotal != 1000 || job.MaxRows != 1000 || job.State != lendgraph.JobQueued || job.EntityType != "agents" || job.Format != lendgraph.FormatCSV {
		t.Fatalf("limit 1000: %+v, %v", job, err)
	}
	// With it: the entitlement's maxRows is the ceiling (400 above it).
	srv.SetEntitlement(org, "agents", lendgraphtest.Entitlement{MaxRows: 2000})
	_, err = c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV})
	var mr *lendgraph.MaxRowsError
	if !errors.As(err, &mr) || mr.EstimatedTotal != 3000 || mr.MaxRows != 2000 {
		t.Fatalf("above maxRows: %v", err)
	}
	filtered, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, FlatFilters: map[string]any{"state": "CA"}})
	if err != nil {
		t.Fatalf("filtered below maxRows: %v", err)
	}
	// Both accepted jobs bill at completion: let them finish before the
	// balance is set, or their debits land after it.
	for _, wait := range []func(context.Context, ...lendgraph.DeliveryWaitOption) (*lendgraph.DeliveryStatus, error){job.Wait, filtered.Wait} {
		if _, err := wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// 402 against the estimate, before any job.
	srv.SetCredits(org, 10)
	_, err = c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 500})
	var ic *lendgraph.InsufficientCreditsError
	if !errors.As(err, &ic) || ic.Balance != 10 || ic.Cost != 500 {
		t.Fatalf("402: %v", err)
	}
	// Entitlements are per resource: loans have none.
	if _, err := c.Loans.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV}); !errors.As(err, &ent) || ent.EntitlementKey != "bulk-delivery.loans" {
		t.Fatalf("loans: %v", err)
	}
	if n := srv.CountRequests("POST", "/v1/agents/bulk-delivery"); n != 6 {
		t.Fatalf("%d submits: rejected submits must not be retried", n)
	}
}

func TestDeliveryService_DeliverFieldsLimitAndBilling(t *testing.T) {
	srv, c := newDeliveryServer(t)
	ctx := context.Background()
	org := lendgraphtest.DefaultOrg
	srv.SetEntitlement(org, "agents", lendgraphtest.Entitlement{MaxRows: 5000,
		Columns: []string{"id", "fullName", "state", "transactionCount"}, Filters: map[string]any{"state": "CA"}})
	before := srv.Credits(org)
	sortDesc := []lendgraph.Sort{{Field: "transactionCount", Order: lendgraph.Desc}}
	job, st := deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatJSON, Sort: sortDesc, Limit: 25,
		Fields: []string{"fullName", "email", "transactionCount"}})
	rows := collect(t, lendgraph.DeliveryJobAs[lendgraph.Row](job).Rows(ctx))
	if len(rows) != 25 || !slices.Equal(rows[0].Names(), []string{"fullName", "transactionCount"}) {
		t.Fatalf("fields ∩ allowed: %d rows, columns %v", len(rows), rows[0].Names())
	}
	// The first 25 in sort order, within the entitlement's row filter.
	want := collect(t, c.Agents.All(ctx, &lendgraph.ListRequest{FlatFilters: map[string]any{"state": "CA"}, Sort: sortDesc, Pagination: &lendgraph.Pagination{Size: 25}}))
	for i, r := range rows {
		var name string
		if err := r.Decode("fullName", &name); err != nil || name != want[i].FullName {
			t.Fatalf("row %d: %q, want %q (%v)", i, name, want[i].FullName, err)
		}
	}
	// Billed once, at completion, on the rows delivered.
	for range 3 {
		if st, _ = job.Status(ctx); *st.ChargedCount != 25 || *st.CreditsCharged != 25 || st.CreditLedgerID == "" {
			t.Fatalf("billing fields: %+v", st)
		}
	}
	d := srv.Debits(org)
	if len(d) != 1 || d[0].Reason != "delivery" || d[0].Amount != 25 || d[0].ID != st.CreditLedgerID || srv.Credits(org) != before-25 {
		t.Fatalf("debits %+v", d)
	}
	// No field left after the intersection: every allowed column.
	job, _ = deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 5, Fields: []string{"email"}})
	rows = collect(t, lendgraph.DeliveryJobAs[lendgraph.Row](job).Rows(ctx))
	if got := rows[0].Names(); !slices.Equal(got, []string{"fullName", "id", "state", "transactionCount"}) {
		t.Fatalf("all allowed columns: %v", got)
	}
	for _, r := range rows {
		if member(r, "state") != `"CA"` {
			t.Fatalf("row filter: %s", member(r, "state"))
		}
	}
	// A narrowed file leaves the missing typed fields zero, in every format.
	for _, f := range allFormats {
		job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: f, Limit: 3, Fields: []string{"id", "state"}})
		for _, a := range collect(t, jobRows(ctx, job, f)) {
			if a.ID == "" || a.State != "CA" || a.FullName != "" || a.TransactionCount != 0 || a.Extra.Len() != 0 {
				t.Fatalf("%s narrowed row: %+v", f, a)
			}
		}
	}
}

func TestDeliveryJob_CancelFailUnbilled(t *testing.T) {
	srv, c := newDeliveryServer(t, lendgraphtest.WithJobRate("delivery", 2000))
	ctx := context.Background()
	org := lendgraphtest.DefaultOrg
	job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	st, err := job.Cancel(ctx)
	if err != nil || st.Status != lendgraph.JobCancelled || st.ResultsURL != "" {
		t.Fatalf("cancel: %+v %v", st, err)
	}
	if _, err := job.Cancel(ctx); !errors.Is(err, lendgraph.ErrJobFinished) {
		t.Fatalf("second cancel: %v", err)
	}
	if _, err := job.Wait(ctx); !errors.Is(err, lendgraph.ErrJobCancelled) {
		t.Fatalf("wait: %v", err)
	}
	if _, err := job.Download(ctx, &bytes.Buffer{}); !errors.Is(err, lendgraph.ErrJobCancelled) {
		t.Fatalf("download of a cancelled job: %v", err)
	}
	// Another caller of the same organization may not see or cancel it.
	other := srv.Client(lendgraph.WithAPIKey(srv.NewCaller(org).Key))
	if _, err := other.Agents.DeliveryJob(job.ID).Status(ctx); !errors.Is(err, lendgraph.ErrForbidden) {
		t.Fatalf("other caller: %v", err)
	}
	if _, err := c.Loans.DeliveryJob(job.ID).Status(ctx); !errors.Is(err, lendgraph.ErrNotFound) {
		t.Fatalf("other resource: %v", err)
	}

	srv.FailNextDelivery("export failed: storage unavailable")
	job, err = c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	st, err = job.Wait(ctx, lendgraph.WithPollInterval(time.Millisecond, 5*time.Millisecond))
	if !errors.Is(err, lendgraph.ErrJobFailed) || !strings.Contains(err.Error(), "storage unavailable") || st.Error == "" || st.ChargedCount != nil {
		t.Fatalf("failed job: %+v %v", st, err)
	}
	if d := srv.Debits(org); len(d) != 0 {
		t.Fatalf("charged for cancelled or failed jobs: %+v", d)
	}

	srv.DropNextDeliveryBilling()
	_, st = deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 10})
	if *st.ChargedCount != 10 || st.CreditsCharged != nil || st.CreditLedgerID != "" {
		t.Fatalf("billing that did not land: %+v", st)
	}
}

func TestDeliveryJob_DownloadResumes(t *testing.T) {
	srv, c := newDeliveryServer(t, lendgraphtest.WithLinkTTL(time.Minute))
	ctx := context.Background()
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 5000})
	job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatNDJSON})
	var whole bytes.Buffer
	n, err := job.Download(ctx, &whole)
	if err != nil || n != int64(whole.Len()) || n < 100_000 {
		t.Fatalf("download: %d %v", n, err)
	}
	// A connection cut halfway: resumed with Range from the bytes written.
	srv.InjectFault("GET", "/objects/*", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
	var cut bytes.Buffer
	if _, err := job.Download(ctx, &cut); err != nil || !bytes.Equal(cut.Bytes(), whole.Bytes()) {
		t.Fatalf("after a cut: %v (%d of %d bytes)", err, cut.Len(), whole.Len())
	}
	// The link expires mid-download: a fresh one from the status, then Range.
	srv.InjectFault("GET", "/objects/*", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
	expiring := &advanceOnWrite{srv: srv}
	if _, err := job.Download(ctx, expiring); err != nil || !bytes.Equal(expiring.buf.Bytes(), whole.Bytes()) {
		t.Fatalf("after expiry: %v", err)
	}
	ranged, expired := 0, 0
	for _, r := range srv.Requests() {
		if r.Listener != "storage" {
			continue
		}
		if r.Header.Get("Range") != "" {
			ranged++
		}
	}
	expired = srv.CountRequests("GET", "/v1/agents/bulk-delivery/*")
	if ranged < 2 || expired < 4 {
		t.Fatalf("ranged requests %d, status fetches %d", ranged, expired)
	}
	// The rows decode from the resumed file.
	if rows := collect(t, lendgraph.DecodeRows[lendgraph.Agent](bytes.NewReader(cut.Bytes()), lendgraph.FormatNDJSON)); len(rows) != 3000 {
		t.Fatalf("%d rows", len(rows))
	}
}

func TestDeliveryJob_RowsStopsCleanly(t *testing.T) {
	srv, c := newDeliveryServer(t)
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 5000})
	for _, f := range allFormats {
		job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: f})
		stopsCleanly(t, job, f, append([]goleak.Option{goleak.IgnoreCurrent()}, httpIdle...))
	}
}

// sameExtra checks a csv row's Extra against the listed row's: strings,
// booleans, objects and arrays are the same JSON; a number is a JSON
// string holding the cell's text that decodes to the same float64.
func sameExtra(t *testing.T, row int, want, got lendgraph.Fields) {
	t.Helper()
	for name, raw := range want.All() {
		switch raw[0] {
		case '"', 't', 'f', '[', '{':
			// Text, booleans, objects and arrays: the value itself.
			if member(got, name) != string(raw) {
				t.Fatalf("csv row %d: %s is %s, want %s", row, name, member(got, name), raw)
			}
			continue
		case 'n':
			continue // csv has no null: an empty cell
		}
		// A number: csv carries no types, so its text, which Decode reads.
		if g := member(got, name); len(g) == 0 || g[0] != '"' {
			t.Fatalf("csv row %d: %s is %s, want a JSON string", row, name, g)
		}
		w, g := new(float64), new(float64)
		if err := want.Decode(name, w); err != nil {
			t.Fatal(err)
		}
		if err := got.Decode(name, g); err != nil || !cmp.Equal(w, g) {
			t.Fatalf("csv row %d: %s decodes to %v (%v), want %v", row, name, g, err, w)
		}
	}
}

// TestDeliveryJob_ParquetNeedsParquetPackage: the root package does not
// read parquet (it does not link a parquet library); its errors name the
// call to use (parquet.Rows, tested in the parquet module).
func TestDeliveryJob_ParquetNeedsParquetPackage(t *testing.T) {
	_, c := newDeliveryServer(t)
	ctx := context.Background()
	pq, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet, Limit: 10})
	var ia *lendgraph.InvalidArgumentError
	for _, job := range []*lendgraph.DeliveryJob[lendgraph.Agent]{pq, c.Agents.DeliveryJob(pq.ID)} { // known format, re-attached
		for _, err := range job.Rows(ctx) {
			if !errors.As(err, &ia) || !strings.Contains(err.Error(), "parquet.Rows") {
				t.Fatalf("job.Rows on parquet: %v", err)
			}
		}
	}
}

// TestDeliveryJob_RowsSurfaceTheDownloadError: when the signed link is
// refused (a 403, as an expired or revoked link is), answered by a page
// that is not the file (a proxy's HTML page, of another size than the
// status record says), or cut mid-body every time, the rows of every
// format end with the download's own error (a *DownloadError holding the
// cause), never with a decoding error that calls the file empty or
// malformed.
func TestDeliveryJob_RowsSurfaceTheDownloadError(t *testing.T) {
	srv, _ := newDeliveryServer(t)
	c := srv.Client(lendgraph.WithMaxRetries(1), lendgraph.WithRetryBackoff(time.Millisecond, time.Millisecond), lendgraph.WithDownloadConnections(1))
	faults := map[string]lendgraphtest.Fault{
		"refused": {Kind: lendgraphtest.Respond, Status: 403, Times: -1, Header: map[string]string{"Content-Type": "application/xml"},
			Body: `<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>`},
		"html page": {Kind: lendgraphtest.Respond, Status: 200, Times: -1, Header: map[string]string{"Content-Type": "text/html"},
			Body: "<html><body>Sign in to continue</body></html>"},
		"cut": {Kind: lendgraphtest.DropMidBody, Times: -1},
	}
	for _, f := range allFormats {
		job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: f, Limit: 1000})
		for name, fault := range faults {
			srv.InjectFault("", "/objects/{key...}", fault)
			n := 0
			var last error
			for _, err := range jobRows(context.Background(), job, f) {
				if err != nil {
					last = err
					break
				}
				n++
			}
			srv.ClearFaults()
			var de *lendgraph.DownloadError
			if !errors.As(last, &de) {
				t.Errorf("%s, link %s: after %d rows: %v; want a *DownloadError", f, name, n, last)
				continue
			}
			if name == "refused" && !strings.Contains(last.Error(), "403") || strings.Contains(last.Error(), "empty") {
				t.Errorf("%s, link %s: %v", f, name, last)
			}
			if name != "cut" && n != 0 {
				t.Errorf("%s, link %s: %d rows from a file that never came", f, name, n)
			}
		}
	}
}
