// Package export lands a whole resource, or any list query, as a dataset
// of many deliveries: when a query is above the row ceiling of one bulk
// delivery (the entitlement's maxRows), it is split by partition fields
// into shards that each fit, every shard is delivered, and the files land
// in a Hive-style layout that DuckDB and Spark read as one table, in a
// local directory or under a prefix of an object store bucket, the same
// way in both:
//
//	DEST/state=CA/city=Los Angeles/part-00000.parquet
//	DEST/state=CA/city=San Diego/part-00000.parquet
//	...
//	DEST/_plan.json      the plan the runs share (Run refuses a destination that holds another)
//	DEST/_claims/<n>.json a shard's claim: created only if absent, before its submit; its job id right after
//	DEST/_shards/<n>.json a shard's record: job, rows, bytes, sha256, ETag, charge
//	DEST/_shards/<n>.ids  the digest of its ids (sorted 64-bit hashes), for the duplicate check
//	DEST/_manifest.json  written by Commit: the plan and every shard's job, rows, bytes, sha256, charge
//	DEST/_SUCCESS        written last by Commit: a reader that sees it sees the whole dataset
//	DEST/.locks/         in a directory, a lock file a shard: several processes may run shards at once
//
// (<n> is a shard's index in the plan.) The data files are the part-*
// files; the export's own files never match that glob, and Spark skips
// names starting with _ or a dot.
//
// Plan, then run:
//
//	req := &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet, Period: lendgraph.PeriodYear(2024)}
//	plan, err := export.NewPlan(ctx, c.Agents, req, &export.PlanOptions{By: []string{"state", "city"}})
//	dest, err := export.Open(ctx, "agents")          // a directory; or "s3://bucket/agents"
//	defer dest.Close()
//	res, err := export.Run(ctx, c.Agents, plan, dest, nil)
//	for a, err := range export.Rows[lendgraph.Agent](ctx, dest) { ... }
//
// NewPlan sizes shards with the list endpoint's total (one record a page:
// nothing is charged), learns the ceiling from the service, and proves
// coverage before anything is charged: the shards' totals must add up to
// the query's, else a *CoverageError names both numbers. The plan it
// returns is sealed by its Digest: a plan edited afterwards (by hand, cut
// short, or another export's) is refused before anything is submitted
// (ErrPlanChanged). Run delivers the shards with bounded concurrency,
// lands each file as delivered (no re-encoding), checks each on the way
// (it decodes; its rows match the job's charged rows; every row holds the
// shard's partition values), and commits the whole once every shard has
// landed: no id twice, every file as its record says, landed against
// planned rows. Running it again resumes where it stopped;
// RunOptions.Shards runs chosen shards alone, so a workflow (Airflow,
// Argo, Kubernetes jobs, Temporal) can run one shard a task from the plan
// in the destination, and Commit finishes it.
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
// answer halves it, and good answers raise it back. The storage is the
// truth: a write that fails (a full disk) changes nothing a run reports,
// and a job whose id cannot be recorded is cancelled (a cancelled job is
// not charged).
//
// Up front, before anything is charged: a query that matches nothing is
// an *EmptyError unless PlanOptions.AllowEmpty is set. The query (filters,
// period, sort) is checked first, then every partition field, even one the
// plan would not need. A 429 or a 502 on the ceiling probe is waited out,
// honouring Retry-After. Delivery Fields are checked by the service only
// at submit: a refusal that every shard would get alike (a field the
// resource does not have, a PlanOptions.MaxRows above the service's
// ceiling, a 402) stops the run's submits at once, and the *RunError says
// what to change; a plan nothing was submitted from is replaced by
// Plan.Write.
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
// An export in a bucket is read in place the same way once _SUCCESS is
// there: read_parquet('s3://BUCKET/PREFIX/**/part-*.parquet',
// hive_partitioning = true) with DuckDB's httpfs extension,
// spark.read.parquet("s3a://BUCKET/PREFIX"). A dataset of no rows
// (PlanOptions.AllowEmpty) has no data file, and a glob that matches no
// file is an error to DuckDB ("No files found"): check _manifest.json's
// verification (landedRows 0) before reading one.
//
// Each file keeps the partition columns it was delivered with (a request
// that narrows Fields gets them added: DeliveredFields); DuckDB and
// Spark take the column's value from the directory, which is the same
// (Run checks it as each file lands). Records without a value of a
// partition field land, with PlanOptions.IncludeMissing, under
// <field>=__HIVE_DEFAULT_PARTITION__, which both read as NULL.
//
// # Destinations
//
// Open takes a directory path or an object store URL (gocloud.dev/blob:
// S3 and what speaks its protocol, such as MinIO and R2; GCS; Azure Blob),
// with the driver the program imports (this package registers none):
//
//	import _ "gocloud.dev/blob/s3blob"
//
//	dest, err := export.Open(ctx, "s3://exports/agents?region=us-east-1") // the path is the prefix
//	err = plan.Write(ctx, dest)                                            // 1. the plan, as _plan.json
//	res, err := export.Run(ctx, c.Agents, plan, dest, &export.RunOptions{Shards: []string{name}}) // 2. one task a shard
//	m, err := export.Commit(ctx, dest, nil)                                // 3. once every shard ran
//
// (Run of every shard commits by itself.) Many tasks on many machines run
// shards of one plan into one destination at once, with no lock over the
// whole and no scheduler of ours: any orchestrator is the engine.
// Credentials come from the store's standard chains, for S3 the AWS
// environment variables, config and credentials files and the instance's
// role; Open refuses a URL that holds any, and none is written to the
// plan, the records or the manifest.
//
// A shard's file streams from its signed link into the destination (in a
// bucket, a multipart upload; nothing on local disk) and is hashed
// (sha256) and decoded on the way. It appears under its final name only
// when complete and checked: in a directory it is written into a
// temporary file beside its final name (created exclusively, readable by
// the owner alone) and renamed into place; in a bucket the upload is
// aborted on any failure (the writer's context is cancelled before Close).
// Parquet is decoded at random, so it is checked once written (in a
// bucket, under _staging/, with ranged reads) and then put under its
// name. Memory stays bounded whatever the file's size: the upload's parts
// (8 MiB, two in flight), lendgraph.DeliveryJob.Download's window (up to
// 32 MiB for a file of 16 MiB or more) and 8 bytes an id for the digest
// (BenchmarkLandObject measures it). Then the shard's digest and its
// record are written: a shard is done when its record exists and matches
// its file. A download cut mid-way resumes with a Range from a fresh link
// of the same job, within the run; a run stopped mid-download streams the
// file again from its job next time (no new job, no new charge).
//
// In a directory, no file is written outside it: names are resolved
// inside it alone (os.Root), so a symbolic link planted at a predictable
// name is never followed out; every new file is created exclusively under
// a random name and renamed into place; and every file of the dataset
// ends with the mode a file created 0644 gets under the process's umask.
//
// Commit checks every shard's record against its file (in a bucket by size
// and ETag, without reading it; in a directory by size and sha256), checks
// that no id appears twice from the digests in bounded memory (without
// reading the data again), and writes _manifest.json and then _SUCCESS. A
// *CommitError names the shards with no record or a record that does not
// match; a *DuplicateError the ids found twice. The digests compare 64-bit
// hashes of the ids (two ids share one with a chance of about n²/2⁶⁵ for
// n rows); only when some hash shows twice does Commit read the data
// files of the shards in its examples, to name them by id (or say that two
// ids share a hash).
//
// What happens when a task fails, and what a later task (an orchestrator's
// retry) does:
//   - Killed before its claim: nothing happened; the next task claims and
//     submits.
//   - Killed between its claim and the record of the job id (the submit in
//     flight, or answered but not recorded): this is the one window left,
//     and at most MaxSubmitsInFlight shards of a process are in it at
//     once. The claim has no job id, and the service may hold a job,
//     charged when it completes, that nobody can find. In a directory the
//     shard's lock tells a dead process's claim at once. In a bucket, for
//     RunOptions.StaleClaimAfter (two minutes) after the submit, the claim
//     may as well be a live task's still waiting on its answer: a later
//     task leaves the shard to it (Result.Busy; lendgraph export run exits
//     75, retry later). After that, every later task leaves the shard as
//     it is (Result.Uncertain, *UncertainError) until
//     RunOptions.ResubmitUncertain accepts that it may be charged twice. A
//     submit whose answer is lost leaves the same claim.
//   - Killed, or cut off, after the job id was recorded (the job running,
//     the file streaming, the record not yet written): the next task
//     continues the same job from a fresh link: no new job, no new charge.
//   - A cut download resumes with a Range from a fresh link; a cut upload,
//     or a file that does not check, streams again from a fresh link of
//     the same job (three times, then the shard fails this run and the
//     next continues the job). A file whose rows are not its partition's
//     fails the shard at once.
//   - The job failed or was cancelled (no charge): its claim is removed,
//     and the next task submits the shard afresh.
//   - Two tasks at once: the claim is an exclusive write (S3 If-None-Match:
//     *, GCS ifGenerationMatch=0; in a directory a hard link to its name,
//     which one writer alone can create), so only one submits. The other
//     continues the job the claim records, or, when the job id is not
//     recorded yet, leaves the shard to the first task (Result.Busy: run
//     it again later). Two tasks landing one job write the same bytes
//     under the same name: one file a partition, never two.
//   - A data file written again or removed after its record: Commit names
//     the shard; running it again lands it again from its job.
//
// The package uses only the public API of package lendgraph, so a Source
// can be any stub that satisfies it.
package export
