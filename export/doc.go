// Package export lands a whole resource, or any list query, as a dataset
// of many deliveries: when a query is above the row ceiling of one bulk
// delivery (the entitlement's maxRows), it is split by partition fields
// into shards that each fit, every shard is delivered, and the files land
// in a Hive-style layout that DuckDB and Spark read as one table:
//
//	DIR/state=CA/city=Los Angeles/part-00000.parquet
//	DIR/state=CA/city=San Diego/part-00000.parquet
//	...
//	DIR/_manifest.json   the plan and every shard's job, rows, bytes, sha256, charge
//	DIR/_SUCCESS         written once every shard landed and the dataset checked out
//	DIR/.locks/          lock files: several processes on one machine may run shards of one export
//
// The data files are the part-* files; the dataset's own files
// (_manifest.json, _SUCCESS, .locks/, and the CLI's _plan.json) never
// match that glob. The lock files are safe to delete while no export runs
// in DIR.
//
// Plan, then run:
//
//	req := &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet, Period: lendgraph.PeriodYear(2024)}
//	plan, err := export.NewPlan(ctx, c.Agents, "agents", req, &export.PlanOptions{By: []string{"state", "city"}})
//	// plan.Shards: names, filters and rows; plan.WriteFile("plan.json") for an orchestrator
//	res, err := export.Run(ctx, c.Agents, plan, &export.RunOptions{Dir: "agents"})
//	for a, err := range export.Rows[lendgraph.Agent](ctx, "agents") { ... }
//
// NewPlan sizes shards with the list endpoint's total (one record a page:
// nothing is charged), learns the ceiling from the service, and proves
// coverage before anything is charged: the shards' totals must add up to
// the query's, else a *CoverageError names both numbers. Run delivers the
// shards with bounded concurrency, lands each file as delivered (no
// re-encoding), checks each (it decodes; its rows match the job's charged
// rows), and checks the whole (no id twice, landed against planned rows).
// Files come down through DeliveryJob.DownloadFile, so a download a run was
// stopped in continues from its part file next time.
// Running it again resumes where it stopped; RunOptions.Shards runs chosen
// shards alone, so a workflow (Airflow, Argo, Kubernetes jobs) can run one
// shard a task from the plan file.
//
// Never paying twice: a delivery job is charged when it completes, and the
// reference has no endpoint that lists one's jobs, so a submit whose answer
// is lost may leave a job that nobody can find. Run therefore never cuts
// a submit with a timeout of its own while ctx is live. When ctx ends, a
// submit already sent gets RunOptions.SubmitTimeout to answer and be
// recorded. A shard whose submit's answer was lost anyway (StateSubmitting)
// is not submitted again unless RunOptions.ResubmitUncertain says so; Run
// lists it in Result.Uncertain with the rows at stake (its planned rows)
// and returns an *UncertainError. Result.UncertainRows and UncertainCredits
// count what the service may have charged, beside ChargedRows and
// CreditsCharged, which it confirmed. At most MaxConcurrency shards run at
// once, and the submits in flight follow an AIMD limit: a 429, a 5xx, or a
// lost or slow answer halves it, and good answers raise it back.
//
// Up front, before anything is charged: a query that matches nothing is
// an *EmptyError unless PlanOptions.AllowEmpty is set. Every partition
// field is checked with the service, even one the plan would not need. A
// 429 on the ceiling probe is waited out, honouring Retry-After. A
// resource name that is not the one the source delivers is refused before
// any request (NewPlan, and Run for a plan read from a file). Delivery
// Fields are checked by the service only at submit: a refusal that every
// shard would get alike (a field the resource does not have, a
// PlanOptions.MaxRows above the service's ceiling, a 402) stops the run's
// submits at once, and the *RunError says what to change.
//
// The dataset, read by other tools (DuckDB, then PySpark), by format:
//
//	-- parquet
//	SELECT * FROM read_parquet('DIR/**/part-*.parquet', hive_partitioning = true)
//	spark.read.parquet("DIR")
//	-- csv
//	SELECT * FROM read_csv('DIR/**/part-*.csv', hive_partitioning = true)
//	spark.read.csv("DIR", header=True)
//	-- json
//	SELECT * FROM read_json('DIR/**/part-*.json', hive_partitioning = true)
//	spark.read.json("DIR", multiLine=True)
//	-- ndjson (.ndjson.gz)
//	SELECT * FROM read_json('DIR/**/part-*.ndjson.gz', hive_partitioning = true)
//	spark.read.json("DIR")
//
// The glob names the data files (part-*), so it matches none of the
// dataset's own files; Spark skips names starting with _ or a dot.
//
// Each file keeps the partition columns it was delivered with (a request
// that narrows Fields gets them added: DeliveredFields); DuckDB and
// Spark take the column's value from the directory, which is the same.
// Records without a value of a partition field land, with
// PlanOptions.IncludeMissing, under <field>=__HIVE_DEFAULT_PARTITION__,
// which both read as NULL.
//
// The package uses only the public API of package lendgraph, so a Source
// can be any stub that satisfies it.
package export
