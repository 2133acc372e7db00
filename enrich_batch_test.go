package lendgraph_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func TestPropertiesService_EnrichBulkAll(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(10), lendgraphtest.WithJobRate("enrichment", 1e9))
	c, ctx := srv.Client(), context.Background()
	// Mostly unknown ids (failed rows) keep the fake's work small.
	ids := make([]string, 50_001)
	for i := range ids {
		ids[i] = fmt.Sprintf("prop_x%d", i)
	}
	copy(ids[49_991:], propertyIDs(srv, 10))
	plan, err := c.Properties.PlanEnrichBulk(ids, nil)
	if err != nil || len(plan.Batches) != 2 || plan.WorstCaseCost != 50_001 {
		t.Fatalf("plan %v %+v", err, plan)
	}
	b, err := plan.Submit(ctx)
	if err != nil || len(b.Jobs) != 2 || b.EstimatedCost != 50_001 {
		t.Fatalf("submit %v %+v", err, b)
	}
	var last lendgraph.EnrichJobStatus
	sts, err := b.Wait(ctx, lendgraph.WithPollInterval(10*time.Millisecond, 100*time.Millisecond),
		lendgraph.WithProgress(func(s *lendgraph.EnrichJobStatus) { last = *s }))
	if err != nil || len(sts) != 2 || last.Total != 50_001 || last.Status != lendgraph.JobCompleted ||
		last.ChargedCount == 0 || last.ChargedCount != sts[0].ChargedCount+sts[1].ChargedCount ||
		last.Failed != 50_001-10 {
		t.Fatalf("wait %v, combined %+v", err, last)
	}
}
