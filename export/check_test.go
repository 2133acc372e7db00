package export_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"gocloud.dev/blob"
)

// TestRunRefusesRowsOfAnotherPartition: a delivery that holds rows of
// another partition (the service did not apply the shard's filter; the
// newcomer's Delaware rows landed under state=RI) fails its shard before
// it is marked landed: nothing under the shard's name, no record, no
// _SUCCESS, and the error names the field and both values. The file is not
// streamed again (it would be the same), and the shard's job stays, so no
// second submit. In a directory, a bucket and MinIO alike.
func TestRunRefusesRowsOfAnotherPartition(t *testing.T) {
	stores := destinations(t)
	stores["minio"] = nil
	for name, open := range stores {
		for _, f := range []lendgraph.Format{lendgraph.FormatCSV, lendgraph.FormatParquet} {
			t.Run(name+"/"+string(f), func(t *testing.T) {
				var (
					st  *export.Storage
					obj objects
					c   *lendgraph.Client
				)
				if open == nil {
					var raw *blob.Bucket
					_, c, st, raw, _ = minioFake(t, 900, 0, "partition")
					obj = bucketObjects{raw}
				} else {
					_, c = fakeFor(t, 900, 0)
					st, obj = open(t)
				}
				p, err := export.NewPlan(context.Background(), c.Agents, &lendgraph.DeliveryRequest{Format: f}, &export.PlanOptions{By: []string{"state"}})
				if err != nil {
					t.Fatal(err)
				}
				src := &scripted{AgentsService: c.Agents, deliver: func(req *lendgraph.DeliveryRequest) ([]lendgraph.Agent, []lendgraph.DeliveryStatus, bool) {
					if stateOf(req) != "RI" {
						return nil, nil, false
					}
					return agentsIn(t, c, "DE"), nil, true
				}}
				var redownloads int
				o := runOpts()
				o.OnEvent = func(e export.Event) {
					if e.Kind == export.EventRedownload && e.Shard == "state=RI" {
						redownloads++
					}
				}
				res, err := export.Run(context.Background(), src, p, st, o)
				var re *export.RunError
				if !errors.As(err, &re) || len(re.Failed) != 1 || re.Failed[0].Shard != "state=RI" {
					t.Fatalf("%v; want shard state=RI failed", err)
				}
				if msg := err.Error(); !strings.Contains(msg, "its state is DE") || !strings.Contains(msg, "state=RI only") {
					t.Errorf("the error does not name the field and values: %s", msg)
				}
				if res.Complete || res.Landed != len(p.Shards)-1 || redownloads != 0 {
					t.Errorf("result %+v, %d downloads again", res, redownloads)
				}
				sh, _ := p.Shard("state=RI")
				for _, key := range []string{sh.File, export.SuccessFile, shardFile(p, sh.Name, ".json"), shardFile(p, sh.Name, ".ids")} {
					if _, err := obj.read(key); err == nil {
						t.Errorf("%s is there after the shard failed", key)
					}
				}
				keys, _ := obj.list()
				for _, k := range keys {
					if strings.HasPrefix(k, "state=RI/") || strings.HasPrefix(k, "_staging/") {
						t.Errorf("left: %s", k)
					}
				}
				// Running it again lands it again from its job: no new submit.
				before := src.submitted()
				if _, err := export.Run(context.Background(), src, p, st, runOpts()); err == nil {
					t.Error("a second run landed the file of another partition")
				}
				if n := src.submitted(); n != before {
					t.Errorf("%d submits in the second run", n-before)
				}
			})
		}
	}
}
