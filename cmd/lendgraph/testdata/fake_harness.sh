#!/usr/bin/env bash
# A test harness in another language than Go, with bash and curl only,
# against "lendgraph fake": start it, set a balance, make a delivery exceed
# the row ceiling (and the balance), run one delivery through, inject a 429,
# and read the ledger and the request log over the control endpoint.
#
#   go build -o /tmp/lendgraph ./cmd/lendgraph
#   LENDGRAPH_BIN=/tmp/lendgraph bash cmd/lendgraph/testdata/fake_harness.sh
#
# (go test ./cmd/lendgraph runs it too: TestFakeHarnessScript.)
set -euo pipefail

bin=${LENDGRAPH_BIN:-lendgraph}
work=$(mktemp -d)
pid=

fail() {
	echo "FAIL: $*" >&2
	[[ -f $work/body ]] && echo "last body: $(<"$work/body")" >&2
	[[ -f $work/fake.log ]] && echo "fake's stderr: $(<"$work/fake.log")" >&2
	exit 1
}
cleanup() {
	[[ -n $pid ]] && kill "$pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# call METHOD URL [BODY]: the status code in $code, the body in $body.
call() {
	local args=(-sS -o "$work/body" -D "$work/headers" -w '%{http_code}' -X "$1" "$2")
	if [[ $2 == "$LENDGRAPH_BASE_URL/v1/"* ]]; then
		args+=(-H "x-api-key: $LENDGRAPH_API_KEY")
	fi
	if [[ $# -ge 3 ]]; then
		args+=(-H 'content-type: application/json' --data "$3")
	fi
	code=$(curl "${args[@]}") || fail "curl $1 $2"
	body=$(<"$work/body")
}

# expect CODE TEXT...: the last call answered CODE and its body holds every TEXT.
expect() {
	local want=$1
	shift
	[[ $code == "$want" ]] || fail "status $code, want $want"
	local t
	for t in "$@"; do
		[[ $body == *"$t"* ]] || fail "the body lacks $t"
	done
}

# number NAME: the first numeric member NAME of the last body.
number() {
	[[ $body =~ \"$1\":([0-9.]+) ]] || fail "no number $1 in the body"
	echo "${BASH_REMATCH[1]}"
}

# 1. Start the fake on a free port and read its one line.
"$bin" fake --addr 127.0.0.1:0 --rows 3000 --entitle agents=2000 >"$work/fake.env" 2>"$work/fake.log" &
pid=$!
line=
for ((i = 0; i < 200; i++)); do
	if IFS= read -r line <"$work/fake.env"; then break; fi
	kill -0 "$pid" 2>/dev/null || fail "the fake exited"
	sleep 0.05
done
[[ $line == LENDGRAPH_BASE_URL=http://127.0.0.1:* ]] || fail "no base URL line: '$line'"
set -a
# shellcheck disable=SC1091
. "$work/fake.env"
set +a
[[ -n $LENDGRAPH_API_KEY && $LENDGRAPH_FAKE_CONTROL_URL == "$LENDGRAPH_BASE_URL/_fake" && -n $LENDGRAPH_SEARCH_HOST ]] ||
	fail "the line lacks a variable: $line"
ctl=$LENDGRAPH_FAKE_CONTROL_URL
echo "ok: the fake serves at $LENDGRAPH_BASE_URL"

# 2. Set a balance.
call PUT "$ctl/orgs/org_default/credits" '{"credits": 500}'
expect 200 '"credits":500'
echo "ok: balance set to 500"

# 3. A delivery above the entitlement's ceiling (3000 agents, maxRows 2000)
#    is refused before any job starts; one within it but above the balance
#    answers 402 with the balance and the cost.
call POST "$LENDGRAPH_BASE_URL/v1/agents/bulk-delivery" '{"format": "csv"}'
expect 400 '"error":"delivery_exceeds_max_rows"' '"estimatedTotal":3000' '"maxRows":2000'
echo "ok: 400 delivery_exceeds_max_rows"
call POST "$LENDGRAPH_BASE_URL/v1/agents/bulk-delivery" '{"format": "csv", "limit": 1000}'
expect 402 '"balance":500' '"cost":1000'
echo "ok: 402 above the balance"

# 4. A delivery that fits: submit, poll, download without the key.
call POST "$LENDGRAPH_BASE_URL/v1/agents/bulk-delivery" '{"format": "csv", "flatFilters": {"state": "TX"}, "fields": ["id", "state"]}'
expect 202 '"status":"queued"'
[[ $body =~ \"jobId\":\"([^\"]+)\" ]] || fail "no jobId"
job=${BASH_REMATCH[1]}
[[ $job == dlv_* ]] || fail "job id $job"
for ((i = 0; i < 200; i++)); do
	call GET "$LENDGRAPH_BASE_URL/v1/agents/bulk-delivery/$job"
	[[ $body == *'"status":"completed"'* ]] && break
	[[ $body == *'"status":"failed"'* ]] && fail "the delivery failed"
	sleep 0.05
done
expect 200 '"status":"completed"' '"chargedCount":'
charged=$(number chargedCount)
[[ $body =~ \"resultsUrl\":\"([^\"]+)\" ]] || fail "no resultsUrl"
amp='&' # quoted: bash 5.2 would put the match in place of a bare &
link=${BASH_REMATCH[1]//\\u0026/"$amp"}
curl -sSf -o "$work/agents.csv" "$link" || fail "download"
rows=-1 # the header line
while IFS= read -r row; do
	[[ $rows -ge 0 && $row != *,TX ]] && fail "row outside the filter: $row"
	rows=$((rows + 1))
done <"$work/agents.csv"
[[ $rows -eq $charged && $rows -gt 0 ]] || fail "$rows rows in the file, $charged charged"
echo "ok: delivered $rows rows ($job)"

# 5. Inject a 429 on the list routes, in the docs' route syntax.
call POST "$ctl/faults" '{"method": "POST", "path": "/v1/{resource}", "status": 429, "headers": {"Retry-After": "1"}, "body": "{\"error\":\"rate limited\"}"}'
expect 201 '"armed":1'
call POST "$LENDGRAPH_BASE_URL/v1/agents" '{"pagination": {"size": 1}}'
expect 429 'rate limited'
headers=$(<"$work/headers")
[[ ${headers,,} == *$'\n'"retry-after: 1"$'\r'* ]] || fail "no Retry-After: 1 header"
call POST "$LENDGRAPH_BASE_URL/v1/agents" '{"pagination": {"size": 1}}'
expect 200 '"total":3000'
echo "ok: one 429, then 200"

# 6. The ledger: one debit for the delivered rows, at completion.
call GET "$ctl/orgs/org_default/ledger"
expect 200 '"reason":"delivery"' "\"amount\":$charged"
[[ $body =~ \"debits\":\[\{[^]]*\}\] && $body != *'},{'* ]] || fail "want exactly one debit"
balance=$(number credits)
[[ $balance -eq $((500 - charged)) ]] || fail "balance $balance, want $((500 - charged))"
echo "ok: ledger holds one debit of $charged; balance $balance"

# 7. The request log: every submit, with the key redacted.
call GET "$ctl/requests?method=POST&path=/v1/agents/bulk-delivery"
expect 200 '"count":3' '"X-Api-Key":"[redacted]"'
[[ $body != *"$LENDGRAPH_API_KEY"* ]] || fail "the request log shows the API key"
echo "ok: request log"

# 8. Stop it: SIGINT ends it cleanly.
kill -INT "$pid"
wait "$pid" || fail "the fake exited with $? on SIGINT"
pid=
echo "PASS"
