package lendgraphtest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The enrichment area: single and bulk owner enrichment, the per-caller
// cache, the enrichments list, and the events of bulk jobs.
//
// Outcomes are deterministic per property (see EnrichOutcome): about three
// in four properties match one or two persons, the rest find nobody; a
// property without a street on the parcel falls back to the address of loan
// i, and has no usable address (400) when that loan does not exist. A live
// lookup that matches costs one credit; no-matches and cache hits are free.

// enrichSource is the data source the fake reports.
const enrichSource = "lendgraphtest-skiptrace"

// maxEnrichBulk is the most ids one bulk job takes.
const maxEnrichBulk = 50_000

// enrichState is the area's in-memory store (see areaState).
type enrichState struct {
	// enrichCache holds each caller's enrichments by property index; the
	// cache is per caller (the user behind the key).
	enrichCache map[string]map[int]*enrichment
	// enrichOrder lists each caller's enriched properties in the order they
	// were first enriched: the enrichments list.
	enrichOrder map[string][]int
	// enrichFail is how many more live single lookups answer 502.
	enrichFail int
	// enrichFailJob makes the next bulk job fail halfway.
	enrichFailJob bool
	events        []Event
	// noAddress holds the properties ClearAddress left without a usable
	// address.
	noAddress map[int]bool
}

func (st *enrichState) init() {
	st.enrichCache = map[string]map[int]*enrichment{}
	st.enrichOrder = map[string][]int{}
	st.noAddress = map[int]bool{}
}

// ClearAddress makes the property have no usable address on the parcel or
// any associated record, as some real parcels have: a live enrichment of it
// answers 400 (single) or fails its row (bulk), and nothing is charged. A
// cached enrichment of it is still served. It panics when the fake has no
// such property.
func (s *Server) ClearAddress(propertyID string) {
	i, ok := s.data.Index("properties", propertyID)
	if !ok {
		panic(fmt.Sprintf("lendgraphtest: ClearAddress(%q): no such property", propertyID))
	}
	s.mu.Lock()
	s.area.noAddress[i] = true
	s.mu.Unlock()
}

// enrichment is one cached lookup.
type enrichment struct {
	persons    []any
	enrichedAt time.Time
}

// Event is one event the fake emitted (bulk enrichment events). Marshalled
// to JSON it is the body lendgraph.ParseEnrichmentEvent reads.
type Event struct {
	Name    string          `json:"name"`
	Payload json.RawMessage `json:"payload"`
	At      time.Time       `json:"createdAt"`
}

// Events returns the events emitted so far, oldest first.
func (s *Server) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.area.events...)
}

func (s *Server) eventLocked(name string, payload map[string]any) {
	b, _ := json.Marshal(payload)
	s.area.events = append(s.area.events, Event{Name: name, Payload: b, At: s.nowLocked()})
}

// FailEnrichment makes the next n live single enrichments fail with 502
// (the enrichment provider erred); nothing is charged or cached. Cache
// hits do not reach the provider and are not affected.
func (s *Server) FailEnrichment(n int) {
	s.mu.Lock()
	s.area.enrichFail = n
	s.mu.Unlock()
}

// FailNextEnrichJob makes the next bulk enrichment job fail halfway with
// an error message; a failed job is not charged.
func (s *Server) FailNextEnrichJob() {
	s.mu.Lock()
	s.area.enrichFailJob = true
	s.mu.Unlock()
}

// EnrichOutcome is what enriching a property gives in the fake.
type EnrichOutcome string

// Enrichment outcomes.
const (
	OutcomeMatch     EnrichOutcome = "match"      // fresh_skip_trace, charged
	OutcomeNoMatch   EnrichOutcome = "no-match"   // fresh_skip_trace_empty, free
	OutcomeNoAddress EnrichOutcome = "no-address" // 400
	OutcomeNotFound  EnrichOutcome = "not-found"  // 404
)

// EnrichOutcome says what a live lookup of the property gives.
func (s *Server) EnrichOutcome(propertyID string) EnrichOutcome {
	i, ok := s.data.Index("properties", propertyID)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !ok:
		return OutcomeNotFound
	case s.enrichAddress(i) == nil:
		return OutcomeNoAddress
	case !s.matches(i):
		return OutcomeNoMatch
	}
	return OutcomeMatch
}

// matches reports whether a live lookup of property i finds anybody.
func (s *Server) matches(i int) bool { return !s.data.rng("enrich-match", i).chance(0.25) }

// enrichAddress is the address a lookup uses: the parcel's, else loan i's;
// nil after ClearAddress. The caller holds s.mu.
func (s *Server) enrichAddress(i int) map[string]any {
	if s.area.noAddress[i] {
		return nil
	}
	p := s.data.Record("properties", i)
	if street, _ := p["street"].(string); street != "" {
		return map[string]any{"street": street, "city": p["city"], "state": p["state"], "zip": p["zip"]}
	}
	if i < s.data.Len("loans") {
		l := s.data.Record("loans", i)
		return map[string]any{"street": l["address"], "city": l["city"], "state": l["state"], "zip": l["zip"]}
	}
	return nil
}

// persons generates the owners found for property i at addr.
func (s *Server) persons(i int, addr map[string]any) []any {
	if !s.matches(i) {
		return []any{}
	}
	g := s.data.rng("enrich-persons", i)
	owner, _ := s.data.Record("properties", i)["ownerName"].(string)
	out := []any{}
	for k := range 1 + g.intn(2) {
		first, last, _ := strings.Cut(owner, " ")
		if k > 0 {
			first = g.pick(firstNames)
		}
		var phones []any
		for range 1 + g.intn(3) {
			phones = append(phones, map[string]any{
				"number": fmt.Sprintf("+1%03d555%04d", 200+g.intn(700), g.intn(10000)),
				"type":   g.pick([]string{"mobile", "landline", "voip"}), "reachable": g.chance(0.8),
				"dnc": g.chance(0.2), "score": g.rangeInt(10, 100),
			})
		}
		mailing := addr
		if g.chance(0.3) {
			st, city, zip := g.place()
			mailing = map[string]any{"street": fmt.Sprintf("PO Box %d", 100+g.intn(9000)), "city": city, "state": st, "zip": zip}
		}
		// The flag forms vary on purpose: their type is not documented.
		out = append(out, map[string]any{
			"name":            map[string]any{"first": first, "last": last, "full": first + " " + last},
			"phoneNumbers":    phones,
			"emails":          []any{map[string]any{"email": strings.ToLower(first+"."+last) + fmt.Sprintf("%d@example.net", i)}},
			"propertyAddress": addr, "mailingAddress": mailing,
			"dnc":       g.chance(0.15),
			"litigator": map[bool]string{true: "Y", false: "N"}[g.chance(0.05)],
			"death":     map[string]any{"value": g.chance(0.02), "source": "ssdi"},
		})
	}
	return out
}

// lookupLocked runs a live lookup for the caller and caches it.
func (s *Server) lookupLocked(c Caller, i int, addr map[string]any) *enrichment {
	e := &enrichment{persons: s.persons(i, addr), enrichedAt: s.nowLocked()}
	m := s.area.enrichCache[c.UserID]
	if m == nil {
		m = map[int]*enrichment{}
		s.area.enrichCache[c.UserID] = m
	}
	if _, seen := m[i]; !seen {
		s.area.enrichOrder[c.UserID] = append(s.area.enrichOrder[c.UserID], i)
	}
	m[i] = e
	return e
}

func (s *Server) cachedLocked(c Caller, i int) *enrichment { return s.area.enrichCache[c.UserID][i] }

func (s *Server) routeEnrich(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/properties/{id}/enrich", s.authed(s.handleEnrich))
	mux.HandleFunc("POST /v1/properties/enrich-bulk", s.authed(s.handleEnrichBulk))
	mux.HandleFunc("GET /v1/properties/enrich-bulk/{jobId}", s.authed(func(w http.ResponseWriter, r *http.Request, c Caller) {
		s.serveJobStatus(w, r.PathValue("jobId"), "enrichment", c)
	}))
	mux.HandleFunc("DELETE /v1/properties/enrich-bulk/{jobId}", s.authed(s.handleEnrichCancel))
	mux.HandleFunc("GET /v1/properties/enrichments", s.authed(s.handleEnrichments))
}

func (s *Server) handleEnrich(w http.ResponseWriter, r *http.Request, c Caller) {
	refresh := false
	if v := r.URL.Query().Get("refresh"); v != "" {
		var err error
		if refresh, err = strconv.ParseBool(v); err != nil {
			writeError(w, http.StatusBadRequest, "refresh must be true or false", nil)
			return
		}
	}
	i, ok := s.data.Index("properties", r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, "property not found", nil)
		return
	}
	status, body := s.enrichOne(c, i, refresh)
	writeJSON(w, status, body)
}

// enrichOne answers a single enrichment: a cache hit is free and needs no
// balance; a live lookup needs a balance of at least the one credit it may
// cost (402 otherwise) and debits it only when it finds somebody.
func (s *Server) enrichOne(c Caller, i int, refresh bool) (int, map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.cachedLocked(c, i); e != nil && !refresh {
		return http.StatusOK, enrichBody(e, "member_cache_hit", true, false)
	}
	addr := s.enrichAddress(i)
	if addr == nil {
		return http.StatusBadRequest, map[string]any{"error": "property has no usable address on the parcel or any associated record"}
	}
	if bal := s.orgLocked(c.OrgID).credits; bal < 1 {
		return http.StatusPaymentRequired, map[string]any{"error": "insufficient credits", "balance": bal, "cost": 1}
	}
	if s.area.enrichFail > 0 {
		s.area.enrichFail--
		return http.StatusBadGateway, map[string]any{"error": "enrichment provider error"}
	}
	e := s.lookupLocked(c, i, addr)
	if len(e.persons) == 0 {
		return http.StatusOK, enrichBody(e, "fresh_skip_trace_empty", false, false)
	}
	s.debitLocked(c, "enrich", 1)
	return http.StatusOK, enrichBody(e, "fresh_skip_trace", false, true)
}

func enrichBody(e *enrichment, reason string, cached, charged bool) map[string]any {
	matched := min(len(e.persons), 1)
	return map[string]any{
		"data":   map[string]any{"persons": e.persons, "enrichedAt": e.enrichedAt.UTC().Format(time.RFC3339Nano), "source": enrichSource},
		"cached": cached, "charged": charged, "reason": reason,
		"result": map[string]any{"requested": 1, "matched": matched, "noMatch": 1 - matched, "error": 0},
	}
}

// bulkEnrich is the state of one bulk enrichment job.
type bulkEnrich struct {
	ids       []string
	refresh   bool
	fail      bool
	objectKey string
	cancelled bool // the cancelled event was emitted
}

func (s *Server) handleEnrichBulk(w http.ResponseWriter, r *http.Request, c Caller) {
	var body struct {
		PropertyIDs []string `json:"propertyIds"`
		Refresh     bool     `json:"refresh"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	n := len(body.PropertyIDs)
	switch {
	case n == 0:
		writeError(w, http.StatusBadRequest, "propertyIds is required and must not be empty", nil)
		return
	case n > maxEnrichBulk:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("propertyIds holds %d ids; at most %d", n, maxEnrichBulk),
			map[string]any{"limit": maxEnrichBulk, "size": n})
		return
	}
	s.mu.Lock()
	if bal := s.orgLocked(c.OrgID).credits; bal < float64(n) {
		s.mu.Unlock()
		writeError(w, http.StatusPaymentRequired, "insufficient credits for the worst case (every property matching)",
			map[string]any{"balance": bal, "cost": n})
		return
	}
	b := &bulkEnrich{ids: body.PropertyIDs, refresh: body.Refresh, fail: s.area.enrichFailJob}
	s.area.enrichFailJob = false
	s.mu.Unlock()
	j := s.startJob(c, jobSpec{
		kind:     "enrichment",
		total:    int64(n),
		run:      func(ctx context.Context, jc *jobCtx) error { return s.runEnrichBulk(ctx, jc, b) },
		complete: func(j *fakeJob) { s.completeEnrichBulkLocked(j, b) },
		render:   renderEnrichBulk,
	}, "ejob")
	s.mu.Lock()
	j.state2 = b // the cancel handler's view of the job
	s.mu.Unlock()
	writeJSON(w, http.StatusAccepted, map[string]any{"jobId": j.id, "status": stateQueued, "propertyCount": n, "estimatedCost": n})
}

func renderEnrichBulk(j *fakeJob, rec map[string]any) {
	rec["total"] = j.spec.total
	for _, k := range []string{"succeeded", "failed", "fromCache", "chargedCount"} {
		rec[k] = j.counters[k]
	}
}

// enrichTick is the rows a bulk worker handles between progress ticks: a
// tick about every 20ms at the configured rate.
func (s *Server) enrichTick() int {
	s.mu.Lock()
	rate := s.cfg.jobRate["enrichment"]
	s.mu.Unlock()
	if rate <= 0 {
		return 1000
	}
	return max(1, min(1000, int(rate/50)))
}

func (s *Server) runEnrichBulk(ctx context.Context, jc *jobCtx, b *bulkEnrich) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	enc := json.NewEncoder(zw)
	n, tick := len(b.ids), s.enrichTick()
	for start := 0; start < n; start += tick {
		end := min(start+tick, n)
		rows, deltas, err := s.enrichChunk(jc.Job(), b, b.ids[start:end])
		if err != nil {
			return err
		}
		for _, row := range rows {
			if err := enc.Encode(row); err != nil {
				return err
			}
		}
		if err := jc.Progress(ctx, int64(end-start), deltas); err != nil {
			return err
		}
		if b.fail && end >= n/2 {
			return s.failEnrichBulk(jc.Job())
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	b.objectKey = "enrichment/" + jc.Job().id + ".ndjson.gz"
	s.putObject(b.objectKey, jc.Job().id+".ndjson.gz", "application/x-ndjson+gzip", buf.Bytes())
	return nil
}

// enrichChunk enriches a tick's properties for the job's owner: cache
// hits (unless refresh), live lookups cached as they happen (they stay
// cached if the job is cancelled later), failures for unknown ids and
// properties without an address. Charges are counted, not debited.
func (s *Server) enrichChunk(j *fakeJob, b *bulkEnrich, ids []string) ([]map[string]any, map[string]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j.state == stateCancelled {
		return nil, nil, errJobCancelled
	}
	d := map[string]int64{}
	rows := make([]map[string]any, 0, len(ids))
	for _, id := range ids {
		row := map[string]any{"propertyId": id, "persons": []any{}}
		rows = append(rows, row)
		i, ok := s.data.Index("properties", id)
		if !ok {
			d["failed"]++
			row["error"] = "property not found"
			continue
		}
		e := s.cachedLocked(j.owner, i)
		reason := "member_cache_hit"
		if e != nil && !b.refresh {
			d["fromCache"]++
			row["cached"] = true
		} else {
			addr := s.enrichAddress(i)
			if addr == nil {
				d["failed"]++
				row["error"] = "property has no usable address on the parcel or any associated record"
				continue
			}
			e = s.lookupLocked(j.owner, i, addr)
			reason = "fresh_skip_trace_empty"
			if len(e.persons) > 0 {
				reason = "fresh_skip_trace"
				d["chargedCount"]++
				row["charged"] = true
			}
			// Fresh lookups only: the reference defines succeeded minus
			// chargedCount as the no-match count, so cache hits (counted
			// in fromCache) are not in succeeded.
			d["succeeded"]++
		}
		row["reason"], row["persons"], row["source"] = reason, e.persons, enrichSource
		row["enrichedAt"] = e.enrichedAt.UTC().Format(time.RFC3339Nano)
	}
	return rows, d, nil
}

func (s *Server) failEnrichBulk(j *fakeJob) error {
	err := errors.New("enrichment provider error: the skip-trace provider stopped answering")
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.statusRecordLocked(j)
	rec["status"], rec["error"] = stateFailed, err.Error()
	s.eventLocked("enrichment.bulk.failed", rec)
	return err
}

// completeEnrichBulkLocked bills the job once, for exactly chargedCount,
// links its results file and emits the completed event.
func (s *Server) completeEnrichBulkLocked(j *fakeJob, b *bulkEnrich) {
	if n := j.counters["chargedCount"]; n > 0 {
		s.debitLocked(j.owner, "enrich-bulk", float64(n))
	}
	j.objectKey = b.objectKey
	rec := s.statusRecordLocked(j)
	rec["status"] = stateCompleted
	s.eventLocked("enrichment.bulk.completed", rec)
}

func (s *Server) handleEnrichCancel(w http.ResponseWriter, r *http.Request, c Caller) {
	id := r.PathValue("jobId")
	s.serveJobCancel(w, id, "enrichment", c)
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok || j.spec.kind != "enrichment" || j.owner.Key != c.Key || j.state != stateCancelled {
		return
	}
	if b, ok := j.state2.(*bulkEnrich); ok && !b.cancelled {
		b.cancelled = true
		s.eventLocked("enrichment.bulk.cancelled", s.statusRecordLocked(j))
	}
}

func (s *Server) handleEnrichments(w http.ResponseWriter, r *http.Request, c Caller) {
	size := 0
	if v := r.URL.Query().Get("size"); v != "" {
		size, _ = strconv.Atoi(v)
	}
	s.mu.Lock()
	order := s.area.enrichOrder[c.UserID]
	start, end, next, ok := pageOf(w, selection{idx: order, n: len(order)}, "enrichments-"+c.UserID, size, r.URL.Query().Get("cursor"))
	if !ok {
		s.mu.Unlock()
		return
	}
	data := make([]map[string]any, 0, end-start)
	for _, i := range order[start:end] {
		e := s.area.enrichCache[c.UserID][i]
		data = append(data, map[string]any{"propertyId": s.data.ID("properties", i),
			"enrichedAt": e.enrichedAt.UTC().Format(time.RFC3339Nano), "source": enrichSource, "personCount": len(e.persons)})
	}
	s.mu.Unlock()
	body := map[string]any{"data": data}
	if next != "" {
		body["cursor"] = next
	}
	writeJSON(w, http.StatusOK, body)
}
