package export_test

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

var fastPoll = []lendgraph.DeliveryWaitOption{lendgraph.WithPollInterval(2*time.Millisecond, 10*time.Millisecond)}

// planAgents plans the export of every agent by the fields, then forgets
// the planning requests so that a test counts only the run's.
func planAgents(t *testing.T, srv *lendgraphtest.Server, c *lendgraph.Client, format lendgraph.Format, by ...string) *export.Plan {
	t.Helper()
	p, err := export.NewPlan(context.Background(), c.Agents, &lendgraph.DeliveryRequest{Format: format}, &export.PlanOptions{By: by})
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	return p
}

func runOpts() *export.RunOptions {
	return &export.RunOptions{WaitOptions: fastPoll}
}

// submits counts the delivery submits the fake received.
func submits(srv *lendgraphtest.Server) int {
	return srv.CountRequests("POST", "/v1/agents/bulk-delivery")
}

// checkDataset checks a committed export against the fake: _SUCCESS, a
// manifest whose every shard's sha256 is its file's, only the plan's data
// files (nothing staged or half-written left), each shard charged once at
// the fake's ledger, and every agent read back once.
func checkDataset(t *testing.T, srv *lendgraphtest.Server, p *export.Plan, dest *export.Storage, obj objects) {
	t.Helper()
	ctx := context.Background()
	if _, err := obj.read(export.SuccessFile); err != nil {
		t.Errorf("no _SUCCESS: %v", err)
	}
	m, err := export.ReadManifest(ctx, dest)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) != len(p.Shards) {
		t.Fatalf("manifest of %d shards, plan of %d", len(m.Shards), len(p.Shards))
	}
	for _, s := range m.Shards {
		b, err := obj.read(s.File)
		if err != nil {
			t.Errorf("shard %s: %v", s.Name, err)
			continue
		}
		sum := sha256.Sum256(b)
		if s.State != export.StateLanded || int64(len(b)) != s.Bytes || hex.EncodeToString(sum[:]) != s.SHA256 || s.Rows == 0 || s.IDs == nil || s.IDs.Count != s.Rows {
			t.Errorf("shard %s: %+v, file %d bytes", s.Name, s, len(b))
		}
	}
	if v := m.Verification; v == nil || !v.Complete || v.LandedRows != p.Total || v.DuplicateIDs != 0 {
		t.Errorf("verification %+v", m.Verification)
	}
	keys, err := obj.list()
	if err != nil {
		t.Fatal(err)
	}
	if parts := dataKeys(keys); len(parts) != len(p.Shards) {
		t.Errorf("%d part-* files for %d shards: %v", len(parts), len(p.Shards), parts)
	}
	for _, k := range keys {
		if strings.HasPrefix(k, "_staging/") || strings.HasSuffix(k, ".tmp") {
			t.Errorf("left behind: %s", k)
		}
	}
	settle(t, srv)
	if debits, credits := ledger(srv); debits != len(p.Shards) || credits != float64(p.Total) {
		t.Errorf("the fake's ledger holds %d delivery debits of %v credits; want one a shard (%d), %d in all", debits, credits, len(p.Shards), p.Total)
	}
	seen := map[string]int{}
	for a, err := range export.Rows[lendgraph.Agent](ctx, dest) {
		if err != nil {
			t.Fatal(err)
		}
		seen[a.ID]++
	}
	d := srv.Dataset()
	if len(seen) != d.Len("agents") {
		t.Errorf("read %d distinct ids, the fake has %d agents", len(seen), d.Len("agents"))
	}
	for i := range d.Len("agents") {
		if n := seen[d.ID("agents", i)]; n != 1 {
			t.Errorf("%s read %d times", d.ID("agents", i), n)
		}
	}
}

func TestRunLandsADatasetConcurrently(t *testing.T) {
	srv, c := fakeFor(t, 3000, 200)
	p := planAgents(t, srv, c, lendgraph.FormatParquet, "state", "city")
	dir := t.TempDir()
	dest := openDest(t, dir)
	var mu sync.Mutex
	inFlight, most := map[string]bool{}, 0
	opts := runOpts()
	opts.Concurrency = 3
	opts.OnEvent = func(e export.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch e.Kind {
		case export.EventSubmitted:
			inFlight[e.Shard] = true
		case export.EventLanded:
			delete(inFlight, e.Shard)
		}
		most = max(most, len(inFlight))
	}
	res, err := export.Run(context.Background(), c.Agents, p, dest, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.Landed != len(p.Shards) || res.Submitted != len(p.Shards) || res.LandedRows != 3000 || res.ChargedRows != 3000 || res.RunChargedRows != 3000 {
		t.Errorf("result %+v", res)
	}
	if most > 3 || most < 2 {
		t.Errorf("at most %d shards in flight at once; want 2 or 3 with Concurrency 3", most)
	}
	if n := submits(srv); n != len(p.Shards) {
		t.Errorf("%d submits for %d shards", n, len(p.Shards))
	}
	checkDataset(t, srv, p, dest, dirObjects(dir))

	// Running it again changes nothing and charges nothing.
	res, err = export.Run(context.Background(), c.Agents, p, dest, runOpts())
	if err != nil || res.Skipped != len(p.Shards) || res.Submitted+res.Redownloaded+res.Reattached != 0 || !res.Complete ||
		res.ChargedRows != 3000 || res.RunChargedRows != 0 {
		t.Errorf("second run: %+v, %v", res, err)
	}
	if n := submits(srv); n != len(p.Shards) {
		t.Errorf("the second run submitted: %d submits", n)
	}
}

func TestRunEveryFormat(t *testing.T) {
	for _, f := range []lendgraph.Format{lendgraph.FormatNDJSON, lendgraph.FormatJSON, lendgraph.FormatCSV} {
		t.Run(string(f), func(t *testing.T) {
			srv, c := fakeFor(t, 600, 0)
			p := planAgents(t, srv, c, f, "state")
			dir := t.TempDir()
			dest := openDest(t, dir)
			if _, err := export.Run(context.Background(), c.Agents, p, dest, runOpts()); err != nil {
				t.Fatal(err)
			}
			checkDataset(t, srv, p, dest, dirObjects(dir))
			ext := map[lendgraph.Format]string{lendgraph.FormatNDJSON: ".ndjson.gz", lendgraph.FormatJSON: ".json", lendgraph.FormatCSV: ".csv"}[f]
			if _, err := os.Stat(filepath.Join(dir, "state=TX", "part-00000"+ext)); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestRunDuplicateCheckFiresWhenRecordsMove: records that moved from
// one shard to another between their deliveries (the data is live) land
// twice, each time with its shard's partition value; the commit finds
// them by id and writes no _SUCCESS.
func TestRunDuplicateCheckFiresWhenRecordsMove(t *testing.T) {
	srv, c := fakeFor(t, 1200, 0)
	p := planAgents(t, srv, c, lendgraph.FormatParquet, "state")
	src := movedSource(t, c, "CA", "TX")
	dir := t.TempDir()
	dest := openDest(t, dir)
	res, err := export.Run(context.Background(), src, p, dest, runOpts())
	var dup *export.DuplicateError
	if !errors.As(err, &dup) {
		t.Fatalf("err = %v, want *DuplicateError", err)
	}
	ca := countBy(srv, "state")["CA"]
	if dup.Count != ca || len(dup.Examples) == 0 || !slices.Contains(dup.Examples[0].Shards[:], "state=TX") || !slices.Contains(dup.Examples[0].Shards[:], "state=CA") {
		t.Errorf("duplicates %+v; want the %d CA agents in state=CA and state=TX", dup, ca)
	}
	if res.Complete {
		t.Error("result says complete")
	}
	if _, err := os.Stat(filepath.Join(dir, export.SuccessFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("_SUCCESS written over duplicates: %v", err)
	}
	var m export.Manifest
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, export.ManifestFile))), &m); err != nil {
		t.Fatal(err)
	}
	if m.Verification == nil || m.Verification.DuplicateIDs != ca || m.Verification.Complete {
		t.Errorf("manifest verification %+v", m.Verification)
	}
	// Reading refuses an export not committed unless asked.
	for _, err := range export.Rows[lendgraph.Agent](context.Background(), dest) {
		if err == nil {
			t.Error("read an export without _SUCCESS")
		}
		break
	}
}

func truncateHalf(name string) error {
	fi, err := os.Stat(name)
	if err != nil {
		return err
	}
	return os.Truncate(name, fi.Size()/2)
}

func TestRunReportsLandedAgainstPlannedRows(t *testing.T) {
	srv, c := fakeFor(t, 900, 0)
	p := planAgents(t, srv, c, lendgraph.FormatParquet, "state")
	// The entitlement's row filters hold the team leads back from every
	// delivery: fewer rows land than the list totals planned.
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 5000, Filters: map[string]any{"isTeamLead": false}})
	leads := 0
	for i := range srv.Dataset().Len("agents") {
		if srv.Dataset().Summary("agents", i)["isTeamLead"] == true {
			leads++
		}
	}
	res, err := export.Run(context.Background(), c.Agents, p, dirDest(t), runOpts())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.PlannedRows != 900 || res.LandedRows != int64(900-leads) || leads == 0 {
		t.Fatalf("result %+v with %d team leads", res, leads)
	}
	want := fmt.Sprintf("landed %d rows, %d fewer than the 900 planned", 900-leads, leads)
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], want) {
		t.Errorf("warnings %q; want %q", res.Warnings, want)
	}
}

// TestRunWritesLinearlyInTheShards counts the bytes an export writes into
// its storage (plan, claims, records, digests, data files, manifest): at
// most 3x the bytes it lands, and a cost a shard that does not grow with
// the number of shards. (The manifest was once rewritten whole on every
// change of a shard: 38x the data at 247 shards, quadratic in them.)
func TestRunWritesLinearlyInTheShards(t *testing.T) {
	perShard := map[string]float64{}
	type writesCase struct {
		by      []string
		rows    int
		maxRows int64
	}
	cases := []writesCase{{[]string{"state"}, 3000, 1000}, {[]string{"state", "city"}, 3000, 300}}
	// A larger export, to measure by hand (BENCHMARKS.md, Exports):
	// LENDGRAPH_WRITES_ROWS records split by LENDGRAPH_WRITES_BY (default
	// state,city) into shards of at most LENDGRAPH_WRITES_MAXROWS rows.
	if rows, maxRows := envInt("LENDGRAPH_WRITES_ROWS", 0), envInt("LENDGRAPH_WRITES_MAXROWS", 0); rows > 0 && maxRows > 0 {
		by := cmp.Or(os.Getenv("LENDGRAPH_WRITES_BY"), "state,city")
		cases = append(cases, writesCase{strings.Split(by, ","), rows, int64(maxRows)})
	}
	for _, tc := range cases {
		by, name := tc.by, fmt.Sprintf("%s/%d", strings.Join(tc.by, ","), tc.rows)
		t.Run(name, func(t *testing.T) {
			_, c := fakeFor(t, tc.rows, 0)
			p, err := export.NewPlan(context.Background(), c.Agents, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV},
				&export.PlanOptions{By: by, MaxRows: tc.maxRows})
			if err != nil {
				t.Fatal(err)
			}
			if len(by) == 2 && len(p.Shards) < 120 {
				t.Fatalf("%d shards; want many", len(p.Shards))
			}
			var written atomic.Int64
			dir := t.TempDir()
			res, err := export.Run(context.Background(), c.Agents, p, export.CountWrites(openDest(t, dir), &written), runOpts())
			if err != nil || !res.Complete {
				t.Fatalf("%+v, %v", res, err)
			}
			var landed int64
			keys, _ := dirObjects(dir).list()
			for _, k := range dataKeys(keys) {
				fi, err := os.Stat(filepath.Join(dir, k))
				if err != nil {
					t.Fatal(err)
				}
				landed += fi.Size()
			}
			ratio := float64(written.Load()) / float64(landed)
			perShard[name] = float64(written.Load()-landed) / float64(len(p.Shards))
			t.Logf("%d shards: %d bytes written for %d landed (%.2fx), %.0f bytes a shard besides the data", len(p.Shards), written.Load(), landed, ratio, perShard[name])
			if ratio > 3 {
				t.Errorf("wrote %.2fx the bytes landed", ratio)
			}
		})
	}
	a, okA := perShard["state/3000"]
	b, okB := perShard["state,city/3000"]
	if okA && okB && b > 2*a {
		t.Errorf("the cost a shard grows with the shards: %.0f bytes a shard at the fewer, %.0f at the more", a, b)
	}
}

// TestRunByABooleanField: a chart names its slices by string ids, but the
// service compares a filter's value with the field's type and refuses
// isTeamLead="true". The plan gives the values the records' type, so an
// export split by a boolean field sizes, runs and lands every row, each
// in the partition of its own value.
func TestRunByABooleanField(t *testing.T) {
	srv, c := fakeFor(t, 1200, 2000)
	p, err := export.NewPlan(context.Background(), c.Agents, &lendgraph.DeliveryRequest{Format: lendgraph.FormatNDJSON},
		&export.PlanOptions{By: []string{"isTeamLead"}, MaxRows: 1200})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range p.Shards {
		names = append(names, s.Name)
		if v := s.Request.FlatFilters["isTeamLead"]; v != true && v != false {
			t.Errorf("shard %s filters isTeamLead by %#v; want a boolean", s.Name, v)
		}
	}
	if !slices.Equal(names, []string{"isTeamLead=false", "isTeamLead=true"}) {
		t.Fatalf("shards %q", names)
	}
	dir := t.TempDir()
	dest := openDest(t, dir)
	res, err := export.Run(context.Background(), c.Agents, p, dest, runOpts())
	if err != nil || !res.Complete || res.LandedRows != 1200 {
		t.Fatalf("%+v, %v", res, err)
	}
	checkDataset(t, srv, p, dest, dirObjects(dir))
}
