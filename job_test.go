package lendgraph_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// A job handle stored (a job id in a database, a queue message) and rebuilt
// as a struct literal or from JSON has no client: every call says how to get
// a usable handle, and sends nothing.
func TestJob_HandleRebuiltByHand(t *testing.T) {
	ctx := context.Background()
	b, err := json.Marshal(&lendgraph.EnrichJob{ID: "ejob_stored"})
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON lendgraph.EnrichJob
	if err := json.Unmarshal(b, &fromJSON); err != nil || fromJSON.ID != "ejob_stored" {
		t.Fatalf("%s: %v %+v", b, err, fromJSON)
	}
	calls := map[string]func() error{
		"EnrichJob literal Wait": func() error { _, err := (&lendgraph.EnrichJob{ID: "ejob_stub"}).Wait(ctx); return err },
		"EnrichJob JSON Status":  func() error { _, err := fromJSON.Status(ctx); return err },
		"EnrichJob Cancel":       func() error { _, err := (&lendgraph.EnrichJob{ID: "ejob_stub"}).Cancel(ctx); return err },
		"EnrichJob ResultRows": func() error {
			for _, err := range (&lendgraph.EnrichJob{ID: "ejob_stub"}).ResultRows(ctx) {
				return err
			}
			return nil
		},
		"DeliveryJob literal Wait": func() error {
			_, err := (&lendgraph.DeliveryJob[lendgraph.Agent]{ID: "ddel_stub"}).Wait(ctx)
			return err
		},
		"DeliveryJob Rows": func() error {
			for _, err := range (&lendgraph.DeliveryJob[lendgraph.Agent]{ID: "ddel_stub"}).Rows(ctx) {
				return err
			}
			return nil
		},
	}
	for name, call := range calls {
		err := call()
		var ia *lendgraph.InvalidArgumentError
		if !errors.As(err, &ia) {
			t.Errorf("%s: %v, want *InvalidArgumentError", name, err)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "  ") || !strings.Contains(msg, "_stub") && !strings.Contains(msg, "ejob_stored") || !strings.Contains(msg, "Job(id)") {
			t.Errorf("%s: %q does not say how to get a usable handle", name, msg)
		}
	}
}

// A scripted job double drives the whole flow of the real handle: Wait's
// polling and progress, the terminal-state errors, Cancel's 409, results.
func TestJob_DoubleDrivesTheHandle(t *testing.T) {
	ctx := context.Background()
	d := &lendgraphtest.JobDouble[lendgraph.EnrichJobStatus]{Statuses: []lendgraph.EnrichJobStatus{
		{Status: lendgraph.JobQueued, Total: 3},
		{Status: lendgraph.JobRunning, Total: 3, Succeeded: 1},
		{Status: lendgraph.JobFailed, Total: 3, Succeeded: 1, Error: "upstream down"},
	}}
	job := lendgraph.NewEnrichJob("ejob_1", d)
	var seen []lendgraph.JobState
	st, err := job.Wait(ctx, lendgraph.WithPollInterval(1, 1), lendgraph.WithProgress(func(s *lendgraph.EnrichJobStatus) { seen = append(seen, s.Status) }))
	var je *lendgraph.JobError
	if !errors.Is(err, lendgraph.ErrJobFailed) || !errors.As(err, &je) || je.Message != "upstream down" || st.Status != lendgraph.JobFailed {
		t.Fatalf("Wait: %+v %v", st, err)
	}
	if len(seen) != 3 || d.Polls() != 3 {
		t.Fatalf("progress %v, polls %d", seen, d.Polls())
	}
	if _, err := job.Cancel(ctx); !errors.Is(err, lendgraph.ErrJobFinished) {
		t.Fatalf("Cancel of a failed job: %v", err)
	}
	for _, err := range job.ResultRows(ctx) {
		if !errors.Is(err, lendgraph.ErrJobFailed) {
			t.Fatalf("ResultRows of a failed job: %v", err)
		}
	}
	// A running job cancelled through the double reads as cancelled after.
	running := lendgraph.NewEnrichJob("ejob_2", &lendgraphtest.JobDouble[lendgraph.EnrichJobStatus]{Statuses: []lendgraph.EnrichJobStatus{{Status: lendgraph.JobRunning}}})
	if st, err := running.Cancel(ctx); err != nil || st.Status != lendgraph.JobCancelled {
		t.Fatalf("Cancel: %+v %v", st, err)
	}
	if _, err := running.Wait(ctx); !errors.Is(err, lendgraph.ErrJobCancelled) {
		t.Fatalf("Wait after Cancel: %v", err)
	}
}

// Deliveries built by lendgraphtest decode to the same rows in every format.
func TestJob_DeliveryDoubleEveryFormat(t *testing.T) {
	ctx := context.Background()
	type office struct {
		City string `json:"city"`
	}
	type row struct {
		ID     string   `json:"id"`
		Zip    string   `json:"zip"`
		Count  int64    `json:"count"`
		Tags   []string `json:"tags"`
		Office office   `json:"office"`
	}
	want := []row{{"a", "02134", 3, []string{"x", "y"}, office{"Boston"}}, {"b", "90210", 0, nil, office{"LA"}}}
	for _, f := range []lendgraph.Format{lendgraph.FormatNDJSON, lendgraph.FormatJSON, lendgraph.FormatCSV} {
		job, err := lendgraphtest.NewDeliveryJob("ddel_1", f, want)
		if err != nil {
			t.Fatal(err)
		}
		var got []row
		for r, err := range job.Rows(ctx) {
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			got = append(got, r)
		}
		if len(got) != 2 || got[0].Zip != "02134" || got[0].Office.City != "Boston" || len(got[0].Tags) != 2 || got[1].Office.City != "LA" {
			t.Errorf("%s: %+v", f, got)
		}
	}
}

// TestJob_WaitCancelledSaysOnlyWhatItKnows: a wait cancelled before any
// status says nothing about the job running (it may be long completed); a
// wait cancelled while the job runs says it keeps running.
func TestJob_WaitCancelledSaysOnlyWhatItKnows(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(50))
	c := srv.Client()
	job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 5})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range job.Rows(ctx) {
		if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "keeps running") {
			t.Errorf("Rows of a completed job with a cancelled context: %v", err)
		}
		break
	}
	if _, err := job.Wait(ctx); !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "keeps running") {
		t.Errorf("Wait with a cancelled context: %v", err)
	}

	srv.SetJobRate("delivery", 1) // a row a second: the job runs for minutes
	slow, err := c.Agents.Deliver(context.Background(), &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := slow.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "keeps running") {
		t.Errorf("Wait cut while the job runs: %v", err)
	}
}
