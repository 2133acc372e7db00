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
// once, but at most MaxSubmitsInFlight submits are in flight (from the
// record of the intent to the record of the job id), so a process killed
// at any moment leaves at most that many shards uncertain; within that
// bound the submits follow an AIMD limit: a 429, a 5xx, or a lost or slow
// answer halves it, and good answers raise it back.
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
// dataset's own files; Spark skips names starting with _ or a dot. An
// export in a bucket is read in place the same way once _SUCCESS is there:
// read_parquet('s3://BUCKET/PREFIX/**/part-*.parquet', hive_partitioning =
// true) with DuckDB's httpfs extension, spark.read.parquet("s3a://BUCKET/PREFIX").
//
// Each file keeps the partition columns it was delivered with (a request
// that narrows Fields gets them added: DeliveredFields); DuckDB and
// Spark take the column's value from the directory, which is the same.
// Records without a value of a partition field land, with
// PlanOptions.IncludeMissing, under <field>=__HIVE_DEFAULT_PARTITION__,
// which both read as NULL.
//
// # Exports into an object store
//
// RunOptions.Bucket, instead of Dir, lands the export in an object store
// (gocloud.dev/blob: S3 and what speaks its protocol, such as MinIO and
// R2; GCS; Azure Blob; a directory through fileblob). The program opens the
// bucket, with the driver it imports (this package registers none), and
// many tasks on many machines run shards of one plan into it at once, with
// no lock and no scheduler of ours: any orchestrator is the engine.
//
//	import _ "gocloud.dev/blob/s3blob"
//
//	b, err := export.OpenBucket(ctx, "s3://exports/agents?region=us-east-1") // the path is the prefix
//	err = plan.WriteBucket(ctx, b)                                          // 1. the plan, as _plan.json
//	res, err := export.Run(ctx, c.Agents, plan, &export.RunOptions{Bucket: b, Shards: []string{name}}) // 2. one task a shard
//	m, err := export.Commit(ctx, b, nil)                                    // 3. once every shard ran
//	for a, err := range export.BucketRows[lendgraph.Agent](ctx, b) { ... }
//
// (Run of every shard commits by itself.) Credentials come from the
// store's standard chains, for S3 the AWS environment variables, config
// and credentials files and the instance's role; OpenBucket refuses a URL
// that holds any, and none is written to the plan, the records or the
// manifest. The bucket holds, beside the data files of the same layout as
// a directory (<n> is a shard's index in the plan):
//
//	_plan.json        the plan the tasks share (Run refuses a bucket that holds another)
//	_claims/<n>.json  a shard's claim: created only if absent, before its submit; its job id right after
//	_shards/<n>.json  a shard's record: job, rows, bytes, sha256, the object's ETag, charge
//	_shards/<n>.ids   the digest of its ids (sorted 64-bit hashes), for the duplicate check
//	_staging/         parquet files while they are checked (a killed task may leave one:
//	                  safe to delete while no task runs)
//	_manifest.json    written by Commit, then
//	_SUCCESS          last: a reader that sees it sees the whole dataset
//
// All of them are off the part-* glob, and Spark skips names starting
// with _.
//
// A shard's file streams from its signed link into the store (a multipart
// upload for S3; nothing on local disk) and is hashed (sha256) and decoded
// on the way: its rows must be the job's charged rows. It appears under its
// final name only when complete and checked: on any failure the writer's
// context is cancelled before Close, which aborts the upload. Parquet is
// decoded at random, so it is written under _staging/, checked from the
// store with ranged reads, and copied to its final name. Memory stays
// bounded whatever the file's size: the upload's parts (8 MiB, two in
// flight), lendgraph.DeliveryJob.Download's window (up to 32 MiB for a
// file of 16 MiB or more) and 8 bytes an id for the digest
// (BenchmarkLandObject measures it). Then the shard's digest and its record
// are written: a shard is done when its record exists and matches its
// object.
//
// Commit checks every shard's record against its object by size and ETag
// (without reading it), checks that no id appears twice from the digests
// in bounded memory (without downloading the data again), and writes
// _manifest.json and then _SUCCESS. A *CommitError names the shards with
// no record or a record that does not match; a *DuplicateError the ids
// found twice. The digests compare 64-bit hashes of the ids (two ids share
// one with a chance of about n²/2⁶⁵ for n rows); only when some hash shows
// twice does Commit read the data files of the shards in its examples, to
// name them by id (or say that two ids share a hash).
//
// What happens when a task fails, and what a later task (an orchestrator's
// retry) does:
//   - Killed before its claim: nothing happened; the next task claims and
//     submits.
//   - Killed between its claim and the record of the job id (the submit in
//     flight, or answered but not recorded): this is the one window left.
//     The claim has no job id, and the service may hold a job, charged
//     when it completes, that nobody can find. For RunOptions.StaleClaimAfter
//     (two minutes) after the submit, the claim may as well be a live
//     task's still waiting on its answer: a later task leaves the shard to
//     it (Result.Busy; lendgraph export run exits 75, retry later). After
//     that, every later task leaves the shard as it is (Result.Uncertain,
//     *UncertainError) until RunOptions.ResubmitUncertain accepts that it
//     may be charged twice. A submit whose answer is lost leaves the same
//     claim.
//   - Killed, or cut off, after the job id was recorded (the job running,
//     the file streaming, the record not yet written): the next task
//     continues the same job from a fresh link: no new job, no new charge.
//   - A cut download resumes with a Range from a fresh link; a cut upload,
//     or a file that does not check, streams again from a fresh link of
//     the same job (three times, then the shard fails this run and the
//     next continues the job).
//   - The job failed or was cancelled (no charge): its claim is removed,
//     and the next task submits the shard afresh.
//   - Two tasks at once: the claim is a conditional write (S3 If-None-Match:
//     *, GCS ifGenerationMatch=0), so only one submits. The other continues
//     the job the claim records, or, when the job id is not recorded yet,
//     leaves the shard to the first task (Result.Busy: run it again later). Two tasks landing one job write the same bytes under the same
//     name: one file a partition, never two. In a directory (file://,
//     opened with OpenBucket) the claim is a hard link to its name, which
//     one writer alone can create; fileblob's own condition, a stat before
//     a rename, is not atomic, and is what a fileblob bucket writing its
//     temporary files in $TMPDIR, or a file system without hard links
//     (some FUSE and SMB mounts), still gets.
//   - A data object written again or removed after its record: Commit
//     names the shard; running it again lands it again from its job.
//
// The package uses only the public API of package lendgraph, so a Source
// can be any stub that satisfies it.
package export
