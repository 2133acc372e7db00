package main

import (
	"fmt"
	"strings"
)

// datasetRead is how DuckDB and Spark read an export of one format.
type datasetRead struct {
	format string // the --format of the export
	duckdb string // a DuckDB query; DIR is the export directory
	spark  string // a PySpark expression; DIR is the export directory
}

// datasetReads are the documented reads of an export directory, one a
// format. The data glob names the data files (part-*), so it never matches
// the export's own files (_plan.json, _claims/, _shards/, _manifest.json,
// _SUCCESS, .locks/), whatever their extension; Spark skips names starting
// with _ or a dot.
// The export command's help prints these lines, README.md and
// export/doc.go show them as they are, and TestDatasetReads runs each
// DuckDB query against an export of its format.
func datasetReads() []datasetRead {
	return []datasetRead{
		{"parquet", "SELECT * FROM read_parquet('DIR/**/part-*.parquet', hive_partitioning = true)", `spark.read.parquet("DIR")`},
		{"csv", "SELECT * FROM read_csv('DIR/**/part-*.csv', hive_partitioning = true)", `spark.read.csv("DIR", header=True)`},
		{"json", "SELECT * FROM read_json('DIR/**/part-*.json', hive_partitioning = true)", `spark.read.json("DIR", multiLine=True)`},
		{"ndjson", "SELECT * FROM read_json('DIR/**/part-*.ndjson.gz', hive_partitioning = true)", `spark.read.json("DIR")`},
	}
}

// datasetReadHelp is the part of the export command's help that says how
// to read the dataset.
func datasetReadHelp() string {
	var b strings.Builder
	b.WriteString(`Read the dataset with DuckDB or Spark (DIR is --out), by --format:

`)
	for _, r := range datasetReads() {
		fmt.Fprintf(&b, "  %-8s %s\n  %-8s %s\n", r.format, r.duckdb, "", r.spark)
	}
	b.WriteString(`
or with lendgraph rows DIR. The glob names the data files, part-*: it
matches none of the export's own files, DIR/_plan.json, DIR/_claims/ and
DIR/_shards/ (a claim and a record a shard), DIR/_manifest.json,
DIR/_SUCCESS and DIR/.locks/ (the lock file that lets several processes run
shards of one export). Spark skips names starting with _ or a dot. A dataset
of no rows (--allow-empty) has no data file: the glob finds none in it.`)
	return b.String()
}
