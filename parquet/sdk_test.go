package parquet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	"github.com/lendgraph/lendgraph-go/parquet"
)

// Parquet's cases of the root package's delivery tests: the root module
// does not require a parquet reader, so the tests that read parquet
// deliveries alongside the other formats run here, each comparing parquet
// with the formats the root package reads.

// agentRow is an agent row with nested members typed (office, tags).
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

// TestDeliveryJob_ParquetRowsAsListed: a parquet delivery's rows are the
// listed rows, Extra included, and typed rows (nested members too) equal
// ndjson's.
func TestDeliveryJob_ParquetRowsAsListed(t *testing.T) {
	srv, c := newDeliveryServer(t)
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 5000})
	ctx := context.Background()
	sortDesc := []lendgraph.Sort{{Field: "transactionCount", Order: lendgraph.Desc}}
	want := collect(t, c.Agents.All(ctx, &lendgraph.ListRequest{Sort: sortDesc, Pagination: &lendgraph.Pagination{Size: 100}}))
	var typed [][]agentRow
	for _, f := range []lendgraph.Format{lendgraph.FormatNDJSON, lendgraph.FormatParquet} {
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
			if !cmp.Equal(a.Extra, w.Extra) {
				t.Fatalf("%s row %d extra: %s", f, i, cmp.Diff(w.Extra, a.Extra))
			}
		}
		typed = append(typed, collect(t, jobRows(ctx, lendgraph.DeliveryJobAs[agentRow](job), f)))
	}
	if d := cmp.Diff(typed[0], typed[1]); d != "" {
		t.Fatalf("parquet rows differ from ndjson: %s", d)
	}
	if typed[1][0].Office.City == "" || len(typed[1][0].Tags) == 0 {
		t.Fatalf("nested fields not decoded: %+v", typed[1][0])
	}
}

// wireRow types the fake's numeric agent members and keeps every other
// member in Extra.
type wireRow struct {
	ID               string           `json:"id"`
	TransactionCount int64            `json:"transactionCount"`
	Volume           float64          `json:"volume"`
	Extra            lendgraph.Fields `json:",unknown"`
}

// TestDeliveryJob_ParquetRowsMarshalAlike: parquet rows marshal as csv's
// (both columnar: a member a row lacks is null), and as ndjson's once
// null members are dropped, nested members and booleans included.
func TestDeliveryJob_ParquetRowsMarshalAlike(t *testing.T) {
	_, c := newDeliveryServer(t)
	ctx := context.Background()
	marshal := func(r wireRow) string {
		extra, err := r.Extra.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf(`{"id":%q,"transactionCount":%d,"volume":%v} + %s`, r.ID, r.TransactionCount, r.Volume, extra)
	}
	formats := []lendgraph.Format{lendgraph.FormatNDJSON, lendgraph.FormatCSV, lendgraph.FormatParquet}
	var raw, noNull [][]string
	for _, f := range formats {
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
	if !strings.Contains(raw[2][0], `"office":{`) || !strings.Contains(raw[2][0], `"tags":[`) {
		t.Fatalf("parquet row 1 has no office or tags: %s", raw[2][0])
	}
	for k := range raw[2] {
		if raw[2][k] != raw[1][k] {
			t.Fatalf("parquet row %d marshals to\n%s\ncsv's to\n%s", k+1, raw[2][k], raw[1][k])
		}
		if noNull[2][k] != noNull[0][k] {
			t.Fatalf("parquet row %d without nulls marshals to\n%s\nndjson's to\n%s", k+1, noNull[2][k], noNull[0][k])
		}
	}
}

// TestDeliveryJob_ParquetNarrowed: a parquet file narrowed to some fields
// leaves the missing typed fields zero.
func TestDeliveryJob_ParquetNarrowed(t *testing.T) {
	_, c := newDeliveryServer(t)
	job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet, Limit: 3, Fields: []string{"id", "state"},
		FlatFilters: map[string]any{"state": "CA"}})
	rows := collect(t, parquet.Rows(context.Background(), job))
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, a := range rows {
		if a.ID == "" || a.State != "CA" || a.FullName != "" || a.TransactionCount != 0 || a.Extra.Len() != 0 {
			t.Fatalf("narrowed row: %+v", a)
		}
	}
}

// untaggedAgent is a row type with no json tags at all: FullName matches
// "fullName", Office "office" (in parquet a JSON text), License_Number
// "licenseNumber".
type untaggedAgent struct {
	ID       string
	FullName string
	Office   struct {
		Name string
		City string
	}
	License_Number string //nolint:revive // a name that folds like licenseNumber
}

// TestDeliveryRows_ParquetUntaggedAndNumbers: parquet rows decoded into a
// type without tags land every member up to case; json.Number takes a
// number and a missing value leaves a pointer nil, as in the other formats.
func TestDeliveryRows_ParquetUntaggedAndNumbers(t *testing.T) {
	_, c := newDeliveryServer(t)
	ctx := t.Context()
	job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet, Limit: 500})
	want := collect(t, parquet.Rows(ctx, job))
	got := collect(t, parquet.Rows(ctx, lendgraph.DeliveryJobAs[untaggedAgent](job)))
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	offices, licences := 0, 0
	for i, a := range want {
		g := got[i]
		var office struct{ Name, City string }
		var licence string
		_ = a.Extra.Decode("office", &office)
		_ = a.Extra.Decode("licenseNumber", &licence)
		if g.ID != a.ID || g.FullName != a.FullName || g.Office.Name != office.Name || g.Office.City != office.City || g.License_Number != licence {
			t.Fatalf("row %d: %+v, want id %s, fullName %q, office %+v, licenseNumber %q", i, g, a.ID, a.FullName, office, licence)
		}
		if office.Name != "" {
			offices++
		}
		if licence != "" {
			licences++
		}
	}
	if offices == 0 || licences == 0 {
		t.Fatalf("rows with an office: %d, with a licence number: %d: the check checks nothing", offices, licences)
	}

	type numberRow struct {
		ID               string      `json:"id"`
		TransactionCount json.Number `json:"transactionCount"`
		State            *string     `json:"state"`
	}
	var byFormat [][]numberRow
	for _, f := range []lendgraph.Format{lendgraph.FormatNDJSON, lendgraph.FormatParquet} {
		job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: f, Limit: 300})
		byFormat = append(byFormat, collect(t, jobRows(ctx, lendgraph.DeliveryJobAs[numberRow](job), f)))
	}
	numbers, nils := 0, 0
	for i, r := range byFormat[1] {
		w := byFormat[0][i]
		if r.ID != w.ID || r.TransactionCount != w.TransactionCount || (r.State == nil) != (w.State == nil) {
			t.Fatalf("row %d: %+v, ndjson's %+v", i, r, w)
		}
		if _, err := r.TransactionCount.Int64(); err == nil {
			numbers++
		}
		if r.State == nil {
			nils++
		}
	}
	if len(byFormat[1]) != 300 || numbers == 0 || nils == 0 {
		t.Fatalf("%d rows, %d numbers, %d without a state: the check checks nothing", len(byFormat[1]), numbers, nils)
	}
}

// TestRows_OtherFormatsRefused: parquet.Rows reads a parquet job, also
// re-attached by id, and refuses other formats and a nil job with an
// *InvalidArgumentError.
func TestRows_OtherFormatsRefused(t *testing.T) {
	_, c := newDeliveryServer(t)
	ctx := context.Background()
	pq, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet, Limit: 10})
	csv, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 10})
	if rows := collect(t, parquet.Rows(ctx, c.Agents.DeliveryJob(pq.ID))); len(rows) != 10 || rows[0].ID == "" {
		t.Fatalf("parquet.Rows: %d rows", len(rows))
	}
	var ia *lendgraph.InvalidArgumentError
	for _, job := range []*lendgraph.DeliveryJob[lendgraph.Agent]{csv, c.Agents.DeliveryJob(csv.ID), nil} {
		for _, err := range parquet.Rows(ctx, job) {
			if !errors.As(err, &ia) {
				t.Fatalf("parquet.Rows on csv: %v", err)
			}
		}
	}
}

// TestRows_StopsCleanly: break and cancel end parquet.Rows at once with
// no goroutine left, over one connection and over parallel ranges.
func TestRows_StopsCleanly(t *testing.T) {
	srv, c := newDeliveryServer(t)
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 5000})
	job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet})
	stopsCleanly(t, job, lendgraph.FormatParquet, append([]goleak.Option{goleak.IgnoreCurrent()}, httpIdle...))

	par, _ := parallelClient(t, srv, 4)
	pjob, _ := largeDelivery(t, srv, par, lendgraph.FormatParquet)
	stopsCleanly(t, pjob, lendgraph.FormatParquet, append([]goleak.Option{goleak.IgnoreCurrent()}, httpIdle...))
}

// TestParallel_ParquetRows: parquet.Rows over parallel ranges gives the
// rows one connection gives, asking for parts of about a quarter of a
// connection's share as each row group lands.
func TestParallel_ParquetRows(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000))
	one, _ := parallelClient(t, srv, 1)
	c, m := parallelClient(t, srv, 4)
	ctx := context.Background()
	job, st := largeDelivery(t, srv, c, lendgraph.FormatParquet)
	a := collect(t, parquet.Rows(ctx, one.Agents.DeliveryJob(job.ID)))
	m.reset()
	if b := collect(t, parquet.Rows(ctx, job)); len(a) != 3000 || !reflect.DeepEqual(a, b) {
		t.Fatalf("rows differ (%d over one connection, %d in parallel)", len(a), len(b))
	}
	_, ranges := m.stats()
	if err := askedParts(ranges, st.Bytes, min(max((st.Bytes+15)/16, partSize/32), partSize/8)); err != nil {
		t.Fatalf("parquet.Rows: %v", err)
	}
}

// TestContract_ParquetDelivery: the design's parquet calls, as a data
// engineer writes them: a parquet delivery, its rows streamed with
// parquet.Rows, and the downloaded file decoded with parquet.Decode, the
// same rows.
func TestContract_ParquetDelivery(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(300))
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 10_000})
	c := srv.Client()
	ctx := context.Background()
	dj, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{
		FlatFilters: map[string]any{"state": "CA"}, Format: lendgraph.FormatParquet, Fields: []string{"id", "fullName"}, Limit: 5000,
	})
	if err != nil {
		t.Fatal(err)
	}
	dst, err := dj.Wait(ctx, lendgraph.WithProgress(func(s *lendgraph.DeliveryStatus) {}))
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	nb, err := dj.Download(ctx, &file)
	if err != nil || nb != dst.Bytes || nb == 0 {
		t.Fatalf("downloaded %d bytes, status says %d: %v", nb, dst.Bytes, err)
	}
	rows := collect(t, parquet.Rows(ctx, dj))
	for _, a := range rows {
		if a.ID == "" || a.FullName == "" {
			t.Fatalf("row %+v", a)
		}
	}
	fromFile := collect(t, parquet.Decode[lendgraph.Agent](bytes.NewReader(file.Bytes()), int64(file.Len())))
	if len(rows) == 0 || !reflect.DeepEqual(rows, fromFile) {
		t.Fatalf("rows %d, from file %d", len(rows), len(fromFile))
	}
}

// TestMisuse_Decode: bad arguments fail with a message that says what to
// change.
func TestMisuse_Decode(t *testing.T) {
	for _, c := range []struct {
		name string
		r    func() error
		fix  string
	}{
		{"parquet.Decode(nil)", func() error { return firstErr(parquet.Decode[lendgraph.Agent](nil, 10)) }, "pass the file's reader"},
		{"parquet.Decode(r, -1)", func() error { return firstErr(parquet.Decode[lendgraph.Agent](strings.NewReader(""), -1)) }, "the file's size"},
	} {
		err := c.r()
		var ia *lendgraph.InvalidArgumentError
		if !errors.As(err, &ia) || !strings.Contains(err.Error(), c.fix) {
			t.Errorf("%s: %v; want an *InvalidArgumentError saying %q", c.name, err, c.fix)
		}
	}
}

// firstErr ranges seq and returns the first error it yields.
func firstErr[T any](seq func(func(T, error) bool)) error {
	for _, e := range seq {
		if e != nil {
			return e
		}
	}
	return nil
}
