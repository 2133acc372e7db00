#!/bin/sh
# Runs each nested-row benchmark and its floor in fresh processes,
# alternately (SDK, floor, SDK, floor, ...), and prints the medians and
# their ratio: every measurement starts from the same state (an empty heap,
# a page cache warm from the file's last read), as a script decoding one
# file does. Usage: pairs.sh BENCH.TEST [ROUNDS] [ROWS]
#   go test -c -o /tmp/bench.test ./parquet && testdata/bench/pairs.sh /tmp/bench.test 5
# Writes the files first with testdata/bench/make_bench.sh ROWS.
set -eu
bin=$1 rounds=${2:-5} rows=${3:-1000000}
# label, the SDK benchmark, its floor (regexps of the sub-benchmark names)
pairs='ndjson.gz ^ndjson$ ^ndjson-gzip\+json
json ^json$ ^json-Decoder
csv ^csv$ ^csv\+strconv
parquet-122880 ^parquet-122880$ ^parquet-122880-GenericReader
parquet-1group ^parquet-1group$ ^parquet-1group-GenericReader
parquet-native ^parquet-native$ ^parquet-native-GenericReader
ndjson-vs-gunzip ^ndjson$ ^ndjson-gunzip-discard'
run() { # regexp of the benchmark -> "ns cpu-ms peak-heap"
	LENDGRAPH_BENCH_ROWS=$rows "$bin" -test.run '^$' -test.bench "$1" -test.benchmem -test.benchtime 1x |
		awk '/^Benchmark/ { for (i = 1; i <= NF; i++) { if ($i == "ns/op") ns = $(i-1); if ($i == "cpu-ms/op") cpu = $(i-1); if ($i == "peak-heap-MiB") heap = $(i-1) } } END { print ns, cpu, heap }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%-18s %10s %10s %8s %10s %8s %8s\n' format sdk-ms floor-ms ratio sdk-cpu cpu-ratio sdk-MiB
echo "$pairs" | while read -r label sdk floor; do
	: >/tmp/pairs.sdk; : >/tmp/pairs.floor
	i=0
	while [ $i -lt "$rounds" ]; do
		run "^BenchmarkDeliveryNested\$/$sdk" >>/tmp/pairs.sdk
		run "^BenchmarkDeliveryNestedFloor\$/$floor" >>/tmp/pairs.floor
		i=$((i + 1))
	done
	s=$(cut -d' ' -f1 /tmp/pairs.sdk | median) f=$(cut -d' ' -f1 /tmp/pairs.floor | median)
	sc=$(cut -d' ' -f2 /tmp/pairs.sdk | median) fc=$(cut -d' ' -f2 /tmp/pairs.floor | median)
	h=$(cut -d' ' -f3 /tmp/pairs.sdk | median)
	awk -v l="$label" -v s="$s" -v f="$f" -v sc="$sc" -v fc="$fc" -v h="$h" 'BEGIN {
		printf "%-18s %10.0f %10.0f %7.2fx %10.0f %7.2fx %8.1f\n", l, s / 1e6, f / 1e6, f / s, sc, (fc > 0 ? fc / sc : 0), h }'
done
rm -f /tmp/pairs.sdk /tmp/pairs.floor
