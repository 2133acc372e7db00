// Command temporal runs a LendGraph export on Temporal: one activity a
// shard of the plan, retried and heartbeating, then a commit activity.
//
// Make the plan first, into the destination:
//
//	lendgraph export plan agents --by state --out s3://bucket/agents
//
// then, with LENDGRAPH_API_KEY (and the store's credentials) set, start a
// worker and the workflow against a Temporal server (the dev server will
// do: temporal server start-dev):
//
//	go run . -dest s3://bucket/agents            # a worker, and the workflow; waits for its end
//	go run . -dest s3://bucket/agents -worker    # one more worker (on another machine), until Ctrl-C
//
// Every worker takes shards from the same task queue. A worker that dies
// stops heartbeating, and Temporal gives its shard to another after a
// minute; the store's claim and recorded job id make that attempt continue
// the same job, so the shard is not charged again. The test in this
// directory runs it against `temporal server start-dev`.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	_ "gocloud.dev/blob/s3blob" // s3:// destinations (AWS_* variables, shared config)
)

func main() {
	address := flag.String("address", envOr("TEMPORAL_ADDRESS", client.DefaultHostPort), "the Temporal server's host:port")
	namespace := flag.String("namespace", envOr("TEMPORAL_NAMESPACE", client.DefaultNamespace), "the Temporal namespace")
	dest := flag.String("dest", "", "the export's destination URL, which holds its plan (required)")
	parallel := flag.Int("parallel", 8, "shards run at once")
	workerOnly := flag.Bool("worker", false, "only run a worker, until interrupted")
	flag.Parse()
	if *dest == "" && !*workerOnly {
		log.Fatal("give -dest URL: the destination that holds the plan (lendgraph export plan ... --out URL)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	lg, err := lendgraph.NewClient()
	if err != nil {
		log.Fatal(err)
	}
	tc, err := client.Dial(client.Options{HostPort: *address, Namespace: *namespace})
	if err != nil {
		log.Fatal(err)
	}
	defer tc.Close()
	w := newWorker(tc, lg)
	if err := w.Start(); err != nil {
		log.Fatal(err)
	}
	defer w.Stop()
	if *workerOnly {
		<-ctx.Done()
		return
	}
	res, err := runExport(ctx, tc, ExportInput{Dest: *dest, Parallel: *parallel})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("committed %d shards, %d rows, %.0f credits charged\n", res.Shards, res.Rows, res.CreditsCharged)
}

// newWorker returns a worker of TaskQueue with the export's workflow and
// activities registered.
func newWorker(tc client.Client, lg *lendgraph.Client) worker.Worker {
	w := worker.New(tc, TaskQueue, worker.Options{})
	w.RegisterWorkflow(ExportWorkflow)
	w.RegisterActivity(&Activities{Client: lg})
	return w
}

// runExport starts ExportWorkflow for in.Dest and waits for its end. The
// workflow's id is the destination: starting it again while it runs
// attaches to the running one instead of starting a second.
func runExport(ctx context.Context, tc client.Client, in ExportInput) (*ExportResult, error) {
	run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflowID(in.Dest), TaskQueue: TaskQueue}, ExportWorkflow, in)
	if err != nil {
		return nil, err
	}
	var res ExportResult
	if err := run.Get(ctx, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// workflowID is the id of the export workflow of dest.
func workflowID(dest string) string { return "lendgraph-export:" + dest }

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
