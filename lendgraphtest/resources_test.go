package lendgraphtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The reference evaluation below is deliberately naive and written apart
// from the engine: every record is generated, every condition evaluated
// from its definition, and the result sorted with a plain comparison.

func refNum(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}

// refCmp compares a record value with a JSON-decoded filter value.
func refCmp(v, w any) (int, bool) {
	if a, ok := refNum(v); ok {
		b, ok := refNum(w)
		if !ok {
			return 0, false
		}
		switch {
		case a < b:
			return -1, true
		case a > b:
			return 1, true
		}
		return 0, true
	}
	if a, ok := v.(string); ok {
		b, ok := w.(string)
		return strings.Compare(a, b), ok
	}
	if a, ok := v.(bool); ok {
		b, ok := w.(bool)
		if !ok {
			return 0, false
		}
		if a == b {
			return 0, true
		}
		if !a {
			return -1, true
		}
		return 1, true
	}
	return 0, false
}

func refEq(v, w any) bool {
	if arr, ok := v.([]any); ok {
		return slices.ContainsFunc(arr, func(e any) bool { return refEq(e, w) })
	}
	c, ok := refCmp(v, w)
	return ok && c == 0
}

func refMatch(r Record, n map[string]any) bool {
	if cs, ok := n["and"].([]any); ok {
		for _, c := range cs {
			if !refMatch(r, c.(map[string]any)) {
				return false
			}
		}
		return true
	}
	if cs, ok := n["or"].([]any); ok {
		for _, c := range cs {
			if refMatch(r, c.(map[string]any)) {
				return true
			}
		}
		return false
	}
	if c, ok := n["not"].(map[string]any); ok {
		return !refMatch(r, c)
	}
	v, has := r[n["field"].(string)]
	w := n["value"]
	// null stands for "the field is absent".
	switch op := n["op"].(string); op {
	case "eq":
		return refIs(v, has, w)
	case "ne":
		return !refIs(v, has, w)
	case "in":
		return slices.ContainsFunc(w.([]any), func(x any) bool { return refIs(v, has, x) })
	default:
		c, ok := refCmp(v, w)
		if !has || !ok {
			return false
		}
		return map[string]bool{"gt": c > 0, "gte": c >= 0, "lt": c < 0, "lte": c <= 0}[op]
	}
}

// refIs is equality with null meaning absent.
func refIs(v any, has bool, w any) bool {
	if w == nil {
		return !has
	}
	return has && refEq(v, w)
}

func refPeriod(date, p string, now time.Time) bool {
	day := now.Format("2006-01-02")
	switch {
	case p == "" || p == "allTime":
		return true
	case p == "yearToDate":
		return strings.HasPrefix(date, now.Format("2006")) && date <= day
	case strings.HasPrefix(p, "last"):
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(p, "last"), "Months"))
		return date >= now.AddDate(0, -n, 0).Format("2006-01-02") && date <= day
	}
	return strings.HasPrefix(date, p+"-")
}

// reference returns the ids a query selects, in order.
func reference(d *Dataset, resource string, q map[string]any, now time.Time) []string {
	type row struct {
		i int
		r Record
	}
	var rows []row
	for i := range d.Len(resource) {
		r := d.Summary(resource, i)
		ok := true
		if ff, has := q["flatFilters"].(map[string]any); has {
			for k, w := range ff {
				v, has := r[k]
				if list, isList := w.([]any); isList {
					ok = ok && slices.ContainsFunc(list, func(x any) bool { return refIs(v, has, x) })
				} else {
					ok = ok && refIs(v, has, w)
				}
			}
		}
		if af, has := q["advancedFilters"].(map[string]any); has {
			ok = ok && refMatch(r, af)
		}
		if p, has := q["period"].(string); has {
			date, _ := r[dateField[resource]].(string)
			ok = ok && refPeriod(date, p, now)
		}
		if ok {
			rows = append(rows, row{i, r})
		}
	}
	sorts, _ := q["sort"].([]any)
	slices.SortStableFunc(rows, func(a, b row) int {
		for _, s := range sorts {
			sp := s.(map[string]any)
			f := sp["field"].(string)
			av, bv := a.r[f], b.r[f]
			c := 0
			switch {
			case av == nil && bv == nil:
			case av == nil:
				c = -1
			case bv == nil:
				c = 1
			default:
				var ok bool
				if c, ok = refCmp(av, bv); !ok {
					c = strings.Compare(fmt.Sprint(av), fmt.Sprint(bv))
				}
			}
			if sp["order"] == "desc" {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return a.i - b.i
	})
	out := make([]string, len(rows))
	for k, r := range rows {
		out[k] = r.r["id"].(string)
	}
	return out
}

// fields of each resource used to build random queries, with sample values
// of the field's type (nil: the field is absent; state is absent on some
// records). Queries the fake must refuse are in TestListRejectsBadRequests.
var queryFields = map[string]map[string][]any{
	"agents": {
		"state": {"CA", "TX", "NY", "ZZ", nil}, "city": {"Austin", "Miami", "Reno"}, "transactionCount": {0, 10, 60, 119},
		"isTeamLead": {true, false}, "tags": {"luxury", "investors"}, "volume": {1e6, 2.5e7}, "brokerage": {"Compass", "Redfin"},
		"lastTransactionDate": {"2025-01-01", "2026-06-30"},
	},
	"loans": {
		"state": {"CA", "FL", "WA", nil}, "transactionType": {"purchase", "refinance", "reverse"}, "mortgageAmount": {2e5, 9e5},
		"interestRate": {4.5, 6.25}, "mortgageDate": {"2024-03-01", "2025-12-31"}, "loanType": {"fha", "va"},
	},
}

// listFields hold arrays: eq means "contains"; they are neither ordered
// nor sorted on.
var listFields = map[string]bool{"tags": true}

// pick returns a random value of the field; ordered (gt, lt...) never
// gets null.
func pickValue(g *rand.Rand, vals []any, ordered bool) any {
	for {
		if v := vals[g.IntN(len(vals))]; v != nil || !ordered {
			return v
		}
	}
}

func randomNode(g *rand.Rand, fields map[string][]any, depth int) map[string]any {
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range fields {
			if !yield(k) {
				return
			}
		}
	})
	if depth > 0 && g.IntN(3) > 0 {
		switch g.IntN(3) {
		case 0, 1:
			kids := []any{}
			for range 1 + g.IntN(3) {
				kids = append(kids, randomNode(g, fields, depth-1))
			}
			return map[string]any{[]string{"and", "or"}[g.IntN(2)]: kids}
		default:
			return map[string]any{"not": randomNode(g, fields, depth-1)}
		}
	}
	f := names[g.IntN(len(names))]
	vals := fields[f]
	ops := []string{"eq", "ne", "gt", "gte", "lt", "lte", "in"}
	if listFields[f] {
		ops = []string{"eq", "ne", "in"}
	}
	op := ops[g.IntN(len(ops))]
	if op == "in" {
		return map[string]any{"field": f, "op": op, "value": []any{pickValue(g, vals, false), pickValue(g, vals, false)}}
	}
	ordered := op != "eq" && op != "ne"
	return map[string]any{"field": f, "op": op, "value": pickValue(g, vals, ordered)}
}

func randomQuery(g *rand.Rand, resource string) map[string]any {
	fields := queryFields[resource]
	q := map[string]any{}
	switch g.IntN(3) {
	case 0:
		ff := map[string]any{}
		for range 1 + g.IntN(2) {
			names := []string{"state", "city", "isTeamLead", "transactionType", "loanType", "transactionCount"}
			f := names[g.IntN(len(names))]
			vals, ok := fields[f]
			if !ok {
				continue
			}
			if g.IntN(2) == 0 {
				ff[f] = []any{vals[g.IntN(len(vals))], vals[g.IntN(len(vals))]}
			} else {
				ff[f] = vals[g.IntN(len(vals))]
			}
		}
		q["flatFilters"] = ff
	case 1:
		q["advancedFilters"] = randomNode(g, fields, 3)
	}
	if g.IntN(2) == 0 {
		q["period"] = []string{"2024", "2025", "last12Months", "last3Months", "yearToDate", "allTime"}[g.IntN(6)]
	}
	var sorts []any
	var sortable []string
	for _, f := range []string{"state", "transactionCount", "volume", "city", "mortgageAmount", "interestRate", "mortgageDate", "isTeamLead"} {
		if _, ok := fields[f]; ok {
			sortable = append(sortable, f)
		}
	}
	for range g.IntN(3) {
		sorts = append(sorts, map[string]any{"field": sortable[g.IntN(len(sortable))], "order": []string{"asc", "desc", ""}[g.IntN(3)]})
	}
	if sorts != nil {
		q["sort"] = sorts
	}
	return q
}

// post sends a list request with the default key and decodes the envelope.
func post(t *testing.T, s *Server, resource string, q map[string]any) (status int, body map[string]any) {
	t.Helper()
	b, _ := json.Marshal(q)
	req, _ := http.NewRequest("POST", s.URL+"/v1/"+resource, bytes.NewReader(b))
	req.Header.Set("x-api-key", s.DefaultCaller().Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

func TestListMatchesBruteForceReference(t *testing.T) {
	s := NewServer(t, WithRows("agents", 500), WithRows("loans", 400))
	g := rand.New(rand.NewPCG(7, 11))
	now := s.Now()
	nonEmpty := 0
	for i := range 100 {
		resource := []string{"agents", "loans"}[i%2]
		q := randomQuery(g, resource)
		want := reference(s.Dataset(), resource, q, now)
		size := []int{3, 7, 50, 100}[g.IntN(4)]
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			page := map[string]any{"size": size}
			if cursor != "" {
				page["cursor"] = cursor
			}
			q["pagination"] = page
			status, body := post(t, s, resource, q)
			if status != 200 {
				t.Fatalf("query %d %v: status %d %v", i, q, status, body)
			}
			total, _ := body["total"].(json.Number).Int64()
			if int(total) != len(want) {
				qb, _ := json.Marshal(q)
				t.Fatalf("query %d %s: total %d, reference %d", i, qb, total, len(want))
			}
			data := body["data"].([]any)
			if len(data) > size {
				t.Fatalf("page of %d rows, size %d", len(data), size)
			}
			for _, r := range data {
				got = append(got, r.(map[string]any)["id"].(string))
			}
			cursor, _ = body["cursor"].(string)
			if cursor == "" || pages > 800 {
				break
			}
		}
		if !slices.Equal(got, want) {
			qb, _ := json.Marshal(q)
			t.Fatalf("query %d %s:\n got %d rows %v\nwant %d rows %v", i, qb, len(got), head(got), len(want), head(want))
		}
		if len(want) > 0 {
			nonEmpty++
		}
	}
	if nonEmpty < 35 {
		t.Fatalf("only %d of 100 queries matched anything: the test is too weak", nonEmpty)
	}
}

func head(s []string) []string { return s[:min(len(s), 8)] }

func TestListRejectsBadRequests(t *testing.T) {
	s := NewServer(t, WithDefaultRows(20))
	// Each bad request answers 400 {"error": ...}; want is what the
	// message must name.
	for name, tc := range map[string]struct {
		q    map[string]any
		want []string
	}{
		"size over 100":   {map[string]any{"pagination": map[string]any{"size": 101}}, []string{"page size"}},
		"foreign cursor":  {map[string]any{"pagination": map[string]any{"cursor": encodeCursor("other", 3)}}, []string{"cursor"}},
		"garbage cursor":  {map[string]any{"pagination": map[string]any{"cursor": "!!"}}, []string{"cursor"}},
		"unknown op":      {map[string]any{"advancedFilters": map[string]any{"field": "state", "op": "like", "value": "C%"}}, []string{"advancedFilters.op", `"like"`, "eq, ne"}},
		"missing op":      {map[string]any{"advancedFilters": map[string]any{"field": "state", "value": "CA"}}, []string{"advancedFilters.op is required"}},
		"two kinds":       {map[string]any{"advancedFilters": map[string]any{"field": "state", "op": "eq", "value": "CA", "not": map[string]any{}}}, []string{"exactly one"}},
		"in without list": {map[string]any{"advancedFilters": map[string]any{"field": "state", "op": "in", "value": "CA"}}, []string{"advancedFilters.value", "array"}},
		"unknown period":  {map[string]any{"period": "fortnight"}, []string{"fortnight"}},
		"unknown sort field": {map[string]any{"sort": []any{map[string]any{"field": "state"}, map[string]any{"field": "amount", "order": "desc"}}},
			[]string{"sort[1].field", `"amount"`, "fields: id, brokerage"}},
		"sort order sideways": {map[string]any{"sort": []any{map[string]any{"field": "state", "order": "sideways"}}}, []string{"sort[0].order", `"sideways"`, "asc or desc"}},
		"sort on a list":      {map[string]any{"sort": []any{map[string]any{"field": "tags"}}}, []string{"sort[0].field", "tags", "lists"}},
		"sort detail-only":    {map[string]any{"sort": []any{map[string]any{"field": "recentTransactions"}}}, []string{"recentTransactions", "complete agents record"}},
		"unknown flat field":  {map[string]any{"flatFilters": map[string]any{"state": "TX", "sate": "TX"}}, []string{"flatFilters.sate", "not a field of agents"}},
		"flat value type":     {map[string]any{"flatFilters": map[string]any{"transactionCount": "many"}}, []string{"flatFilters.transactionCount", `"many" is a string`, "numbers"}},
		"flat list value type": {map[string]any{"flatFilters": map[string]any{"state": []any{"TX", 5}}},
			[]string{"flatFilters.state[1]", "5 is a number", "strings"}},
		"flat on an object": {map[string]any{"flatFilters": map[string]any{"office": "x"}}, []string{"flatFilters.office", "objects"}},
		"unknown advanced field": {map[string]any{"advancedFilters": map[string]any{"and": []any{
			map[string]any{"field": "state", "op": "eq", "value": "TX"},
			map[string]any{"not": map[string]any{"field": "transactionCnt", "op": "gt", "value": 3}}}}},
			[]string{"advancedFilters.and[1].not.field", `"transactionCnt"`}},
		"advanced value type": {map[string]any{"advancedFilters": map[string]any{"or": []any{map[string]any{"field": "isTeamLead", "op": "eq", "value": "yes"}}}},
			[]string{"advancedFilters.or[0].value", `"yes" is a string`, "booleans"}},
		"in value type":    {map[string]any{"advancedFilters": map[string]any{"field": "volume", "op": "in", "value": []any{1, "2"}}}, []string{"advancedFilters.value[1]", "numbers"}},
		"ordering a list":  {map[string]any{"advancedFilters": map[string]any{"field": "tags", "op": "gt", "value": "a"}}, []string{"advancedFilters.op", "tags", "lists"}},
		"ordering by null": {map[string]any{"advancedFilters": map[string]any{"field": "state", "op": "lt", "value": nil}}, []string{"advancedFilters.value", "null"}},
	} {
		status, body := post(t, s, "agents", tc.q)
		msg, _ := body["error"].(string)
		if status != 400 || msg == "" {
			t.Errorf("%s: %d %v", name, status, body)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: error %q does not name %q", name, msg, w)
			}
		}
		if name == "size over 100" && (body["limit"] != json.Number("100") || body["size"] != json.Number("101")) {
			t.Errorf("size over 100: body %v, want {error, limit, size}", body)
		}
	}
}

// TestStrictEverywhere: every endpoint that takes a list query checks its
// filters the same way (and its sort, where the sort is not ignored), and
// a delivery checks its fields.
func TestStrictEverywhere(t *testing.T) {
	s := NewServer(t, WithDefaultRows(20))
	badFilter := map[string]any{"flatFilters": map[string]any{"amount": 5}}
	badSort := map[string]any{"sort": []any{map[string]any{"field": "amount", "order": "desc"}}}
	for _, tc := range []struct {
		path string
		q    map[string]any
	}{
		{"/v1/loans", badSort}, {"/v1/loans", badFilter}, {"/v1/loans/analytics/summary", badFilter},
		{"/v1/loans/analytics/chart", badFilter}, {"/v1/originators/count", badFilter}, {"/v1/properties/count", badFilter},
		{"/v1/lenders/count", badFilter}, {"/v1/loans/bulk-delivery", badSort}, {"/v1/loans/bulk-delivery", badFilter},
		{"/v1/properties/analytics/chart", map[string]any{"slice": "amount"}},
		{"/v1/loans/analytics/chart", map[string]any{"slice": "state", "segment": "amount"}},
	} {
		q := maps.Clone(tc.q)
		if strings.HasSuffix(tc.path, "bulk-delivery") {
			q["format"] = "csv"
		}
		status, body := postPath(t, s, tc.path, q)
		if msg, _ := body["error"].(string); status != 400 || !strings.Contains(msg, `"amount"`) {
			t.Errorf("POST %s %v: %d %v", tc.path, tc.q, status, body)
		}
	}
	for fields, want := range map[string]string{
		`["id","fullName","fullname"]`: `fields[2]: "fullname" is not a field of agents`,
		`["recentTransactions"]`:       "only on the complete agents record",
	} {
		var f []any
		_ = json.Unmarshal([]byte(fields), &f)
		status, body := postPath(t, s, "/v1/agents/bulk-delivery", map[string]any{"format": "csv", "fields": f})
		if msg, _ := body["error"].(string); status != 400 || !strings.Contains(msg, want) {
			t.Errorf("delivery fields %s: %d %v, want 400 naming %q", fields, status, body, want)
		}
	}
	// What is valid still works: null matches the records without a state.
	status, body := post(t, s, "agents", map[string]any{"flatFilters": map[string]any{"state": nil}})
	total, _ := body["total"].(json.Number).Int64()
	want := 0
	for i := range 20 {
		if !s.Dataset().HasState("agents", i) {
			want++
		}
	}
	if status != 200 || int(total) != want {
		t.Errorf("state null: %d total %d, want %d", status, total, want)
	}
}

// postPath posts body to path with the default key and decodes the answer.
func postPath(t *testing.T, s *Server, path string, q map[string]any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(q)
	req, _ := http.NewRequest("POST", s.URL+path, bytes.NewReader(b))
	req.Header.Set("x-api-key", s.DefaultCaller().Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	_ = dec.Decode(&body)
	return resp.StatusCode, body
}

func TestDetail(t *testing.T) {
	s := NewServer(t, WithDefaultRows(20))
	for _, res := range Resources {
		id := s.Dataset().ID(res, 19)
		req, _ := http.NewRequest("GET", s.URL+"/v1/"+res+"/"+id, nil)
		req.Header.Set("x-api-key", s.DefaultCaller().Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var r map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if resp.StatusCode != 200 || r["id"] != id {
			t.Fatalf("%s %s: %d %v", res, id, resp.StatusCode, r)
		}
		for _, k := range detailOnly[res] {
			if _, ok := r[k]; !ok {
				t.Errorf("%s detail lacks %s", res, k)
			}
			if _, ok := s.Dataset().Summary(res, 19)[k]; ok {
				t.Errorf("%s summary has detail member %s", res, k)
			}
		}
		req, _ = http.NewRequest("GET", s.URL+"/v1/"+res+"/"+s.Dataset().ID(res, 20), nil)
		req.Header.Set("x-api-key", s.DefaultCaller().Key)
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Fatalf("%s past the end: %d", res, resp.StatusCode)
		}
	}
}

func TestDatasetDeterministic(t *testing.T) {
	a, b := newDataset(5, 100, nil), newDataset(5, 100, nil)
	c := newDataset(6, 100, nil)
	ra, _ := json.Marshal(a.Record("loans", 42))
	rb, _ := json.Marshal(b.Record("loans", 42))
	rc, _ := json.Marshal(c.Record("loans", 42))
	if !bytes.Equal(ra, rb) || bytes.Equal(ra, rc) {
		t.Fatal("dataset not a function of the seed")
	}
	for _, res := range Resources {
		for _, i := range []int{0, 57, 99} {
			id := a.ID(res, i)
			if j, ok := a.Index(res, id); !ok || j != i {
				t.Fatalf("%s: Index(ID(%d)) = %d, %v", res, i, j, ok)
			}
		}
		if _, ok := a.Index(res, a.ID(res, 100)); ok {
			t.Fatalf("%s: id past the end resolved", res)
		}
	}
}

func TestMillionRowsStartInstantly(t *testing.T) {
	start := time.Now()
	s := NewServer(t, WithRows("agents", 1_000_000))
	status, body := post(t, s, "agents", map[string]any{"pagination": map[string]any{"size": 100}})
	if status != 200 || body["total"] != json.Number("1000000") || len(body["data"].([]any)) != 100 {
		t.Fatalf("%d %v", status, body["total"])
	}
	// Page 5,000 of the unsorted list costs one page of generation.
	_, body = post(t, s, "agents", map[string]any{"pagination": map[string]any{"size": 100, "cursor": body["cursor"]}})
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("start and two pages took %v", d)
	}
	if data := body["data"].([]any); data[0].(map[string]any)["id"] != "agt_0000100" {
		t.Fatalf("second page starts at %v", data[0])
	}
}

func TestAuth(t *testing.T) {
	s := NewServer(t, WithDefaultRows(10))
	other := s.NewCaller("org_other")
	same := s.NewCaller(DefaultOrg)
	if other.OrgID != "org_other" || other.Key == s.DefaultCaller().Key || same.UserID == s.DefaultCaller().UserID {
		t.Fatalf("callers %+v %+v", other, same)
	}
	for name, h := range map[string]http.Header{
		"no key":             {},
		"wrong x-api-key":    {"X-Api-Key": {"lg_test_wrong"}},
		"wrong bearer":       {"Authorization": {"Bearer lg_test_wrong"}},
		"key without Bearer": {"Authorization": {other.Key}},
		"ok x-api-key":       {"X-Api-Key": {other.Key}},
		"ok bearer":          {"Authorization": {"Bearer " + same.Key}},
	} {
		req, _ := http.NewRequest("POST", s.URL+"/v1/agents", strings.NewReader(`{}`))
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := 401
		if strings.HasPrefix(name, "ok") {
			want = 200
		}
		if resp.StatusCode != want {
			t.Errorf("%s: %d %s", name, resp.StatusCode, b)
		}
		if want == 401 && !strings.Contains(string(b), `"error"`) {
			t.Errorf("%s: body %s", name, b)
		}
	}
}

func TestRequestLog(t *testing.T) {
	s := NewServer(t, WithDefaultRows(10))
	post(t, s, "agents", map[string]any{"period": "2024"})
	s.ResetRequests()
	post(t, s, "loans", map[string]any{"period": "2025"})
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Method != "POST" || reqs[0].Path != "/v1/loans" || reqs[0].Listener != "api" ||
		string(reqs[0].Body) != `{"period":"2025"}` || reqs[0].Header.Get("X-Api-Key") == "" {
		t.Fatalf("%+v", reqs)
	}
	if s.CountRequests("POST", "/v1/*") != 1 || s.CountRequests("GET", "/v1/*") != 0 {
		t.Fatal("CountRequests")
	}
}

func TestStartStandalone(t *testing.T) {
	s, err := Start(WithAddr("127.0.0.1:0"), WithDefaultRows(5))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %s", s.URL)
	}
	if status, _ := post(t, s, "agents", nil); status != 200 {
		t.Fatalf("status %d", status)
	}
	if _, err := Start(WithAddr(strings.TrimPrefix(s.URL, "http://"))); err == nil {
		t.Fatal("second server on a busy address started")
	}
}

// TestStatesSpreadAndMissing: records spread over the 50 states and DC,
// weighted (California the largest), and some have no state, so the
// totals of a query split by state fall short of the whole until a
// state=null shard is added.
func TestStatesSpreadAndMissing(t *testing.T) {
	const n = 6000
	s := NewServer(t, WithRows("agents", n))
	byState := map[string]int{}
	for i := range n {
		st, ok := s.Dataset().Summary("agents", i)["state"].(string)
		if ok != s.Dataset().HasState("agents", i) || ok && st == "" {
			t.Fatalf("agent %d: state %q, HasState %v", i, st, s.Dataset().HasState("agents", i))
		}
		byState[st] += 1
	}
	if len(byState) != 52 || byState[""] < n/200 || byState[""] > n/50 || byState["CA"] < n/10 || byState["WY"] > n/100 {
		t.Fatalf("%d states (with none), none %d, CA %d, WY %d", len(byState), byState[""], byState["CA"], byState["WY"])
	}
	total := func(ff map[string]any) int {
		t.Helper()
		status, body := post(t, s, "agents", map[string]any{"flatFilters": ff, "pagination": map[string]any{"size": 1}})
		if status != 200 {
			t.Fatalf("%v: %d %v", ff, status, body)
		}
		n, _ := body["total"].(json.Number).Int64()
		return int(n)
	}
	sum := 0
	for _, st := range states {
		got := total(map[string]any{"state": st})
		if got != byState[st] {
			t.Fatalf("state %s: total %d, want %d", st, got, byState[st])
		}
		sum += got
	}
	if all := total(nil); sum != all-byState[""] || sum == all {
		t.Fatalf("shards by state sum to %d of %d; %d have no state", sum, all, byState[""])
	}
	if none := total(map[string]any{"state": nil}); none != byState[""] {
		t.Fatalf("state null: %d, want %d", none, byState[""])
	}
}
