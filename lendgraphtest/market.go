package lendgraphtest

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

func (s *Server) routeMarket(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/market/movement/most-gained", s.authed(s.handleMostGained))
}

// marketState is the area's in-memory store (see areaState): the
// most-gained parameter sets seen, when each is ready, and its answer.
type marketState struct {
	movement     map[string]*movementResult
	computeDelay time.Duration
}

type movementResult struct {
	readyAt time.Time
	once    sync.Once
	body    map[string]any // written once by once, never changed after
}

// DefaultComputeDelay is how long a new most-gained parameter set
// "computes" (answering 202) before its rows come.
const DefaultComputeDelay = 20 * time.Millisecond

func (st *marketState) init() {
	st.movement = map[string]*movementResult{}
	st.computeDelay = DefaultComputeDelay
}

// SetComputeDelay sets how long a new most-gained parameter set answers
// 202 computing before its rows come; 0 answers at once. Advance moves the
// clock past it without waiting.
func (s *Server) SetComputeDelay(d time.Duration) {
	s.mu.Lock()
	s.area.computeDelay = d
	s.mu.Unlock()
}

// movementParams is a validated most-gained query.
type movementParams struct {
	dateRange  string
	states     map[string]bool
	city       string
	categories map[string]bool
	rankBy     string
	limit      int
}

var (
	dateRangeRE = regexp.MustCompile(`^(?:last_([0-9]{1,3})_months|year_to_date|all_time|([0-9]{4})|fy_([0-9]{4})|fiscal_([0-9]{4}))$`)
	stateRE     = regexp.MustCompile(`^[A-Za-z]{2}$`)
)

func parseMovement(q url.Values) (movementParams, error) {
	p := movementParams{dateRange: q.Get("dateRange"), rankBy: q.Get("rankBy"), limit: 10, states: map[string]bool{}, categories: map[string]bool{}}
	if p.dateRange == "" {
		p.dateRange = "last_12_months"
	}
	m := dateRangeRE.FindStringSubmatch(p.dateRange)
	if m == nil {
		return p, fmt.Errorf("dateRange %q is invalid", p.dateRange)
	}
	if m[1] != "" {
		if n, _ := strconv.Atoi(m[1]); n < 1 {
			return p, fmt.Errorf("dateRange %q: N must be 1 to 999", p.dateRange)
		}
	}
	var states []string
	if st := q.Get("state"); st != "" {
		states = append(states, st)
	}
	if sts := q.Get("states"); sts != "" {
		states = append(states, strings.Split(sts, ",")...)
	}
	for _, st := range states {
		if !stateRE.MatchString(st) {
			return p, fmt.Errorf("state %q must be two letters", st)
		}
		p.states[strings.ToUpper(st)] = true
	}
	if q.Has("city") {
		p.city = q.Get("city")
		if n := len([]rune(p.city)); n < 1 || n > 100 {
			return p, fmt.Errorf("city must be 1 to 100 characters")
		}
	}
	if c := q.Get("companyCategory"); c != "" {
		for _, v := range strings.Split(c, ",") {
			if v != "BANK" && v != "CU" && v != "OTHER" {
				return p, fmt.Errorf("companyCategory %q is not one of BANK, CU, OTHER", v)
			}
			p.categories[v] = true
		}
	}
	switch p.rankBy {
	case "":
		p.rankBy = "count"
	case "count", "net":
	default:
		return p, fmt.Errorf("rankBy %q is not count or net", p.rankBy)
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			return p, fmt.Errorf("limit must be an integer from 1 to 100")
		}
		p.limit = n
	}
	return p, nil
}

// window turns a date range into its first and last day and month count,
// relative to now (the current month is never included).
func movementWindow(dr string, now time.Time) (start, end time.Time, months int) {
	thisMonth := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	end = thisMonth.AddDate(0, 0, -1)
	m := dateRangeRE.FindStringSubmatch(dr)
	switch {
	case m[1] != "":
		months, _ = strconv.Atoi(m[1])
		start = thisMonth.AddDate(0, -months, 0)
	case dr == "year_to_date":
		start = time.Date(now.Year(), 1, 1, 0, 0, 0, 0, time.UTC)
		months = int(now.Month()) - 1
	case dr == "all_time":
		start = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
		months = (end.Year()-start.Year())*12 + int(end.Month()) - int(start.Month()) + 1
	default:
		y, _ := strconv.Atoi(m[2] + m[3] + m[4])
		start = time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
		end = time.Date(y, 12, 31, 0, 0, 0, 0, time.UTC)
		months = 12
	}
	return start, end, months
}

// maxMovers bounds the originators scanned for moves.
const maxMovers = 20_000

func (s *Server) handleMostGained(w http.ResponseWriter, r *http.Request, _ Caller) {
	p, err := parseMovement(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), nil)
		return
	}
	key := r.URL.Query().Encode()
	s.mu.Lock()
	now := s.nowLocked()
	res, seen := s.area.movement[key]
	if !seen {
		res = &movementResult{readyAt: now.Add(s.area.computeDelay)}
		s.area.movement[key] = res
	}
	wait := res.readyAt.Sub(now)
	s.mu.Unlock()
	if wait > 0 {
		writeJSON(w, http.StatusAccepted, map[string]any{"status": "computing", "retryAfterMs": max(1, (wait+time.Millisecond-1)/time.Millisecond)})
		return
	}
	// The answer is computed once, outside s.mu (it scans the dataset), and
	// read only through the Once: concurrent requests for the same
	// parameter set wait for the first and share its answer.
	res.once.Do(func() { res.body = s.computeMovement(p, now) })
	writeJSON(w, http.StatusOK, res.body)
}

type movementRow struct {
	name, nmls          string
	gained, lost, units int64
	volume              float64
}

// computeMovement ranks companies by loan officers gained. Each originator
// moved with probability one half, on a date from the dataset, from a
// deterministic previous company to its current one.
func (s *Server) computeMovement(p movementParams, now time.Time) map[string]any {
	start, end, months := movementWindow(p.dateRange, now)
	from, to := start.Format("2006-01-02"), end.Format("2006-01-02")
	nComp := max(s.data.Len("companies"), 1)
	rows := map[string]*movementRow{}
	row := func(idx int) *movementRow {
		id := s.data.ID("companies", idx)
		if r, ok := rows[id]; ok {
			return r
		}
		r := &movementRow{name: s.data.companyName(idx), nmls: id}
		rows[id] = r
		return r
	}
	category := func(idx int) string { return s.data.Summary("companies", idx)["category"].(string) }
	for i := range min(s.data.Len("originators"), maxMovers) {
		g := s.data.rng("movement", i)
		if !g.chance(0.5) {
			continue
		}
		moved := g.date(1400)
		if moved < from || moved > to {
			continue
		}
		o := s.data.Summary("originators", i)
		if st, _ := o["state"].(string); len(p.states) > 0 && !p.states[st] {
			continue
		}
		if p.city != "" && !strings.EqualFold(o["city"].(string), p.city) {
			continue
		}
		cur, _ := s.data.Index("companies", o["companyNmlsId"].(string))
		prev := (cur + 1 + g.intn(max(nComp-1, 1))) % nComp
		if prev == cur {
			continue
		}
		if len(p.categories) == 0 || p.categories[category(cur)] {
			r := row(cur)
			r.gained++
			r.units += o["loanCount"].(int64)
			r.volume += o["volume"].(float64)
		}
		if len(p.categories) == 0 || p.categories[category(prev)] {
			row(prev).lost++
		}
	}
	list := make([]*movementRow, 0, len(rows))
	for _, r := range rows {
		if r.gained > 0 || p.rankBy == "net" {
			list = append(list, r)
		}
	}
	slices.SortFunc(list, func(a, b *movementRow) int {
		ka, kb := a.gained, b.gained
		if p.rankBy == "net" {
			ka, kb = a.gained-a.lost, b.gained-b.lost
		}
		return cmp.Or(cmp.Compare(kb, ka), cmp.Compare(b.gained-b.lost, a.gained-a.lost), cmp.Compare(a.nmls, b.nmls))
	})
	truncated := len(list) > p.limit
	list = list[:min(len(list), p.limit)]
	data := make([]map[string]any, 0, len(list))
	for _, r := range list {
		avg := 0.0
		if r.units > 0 {
			avg = round(r.volume/float64(r.units), 2)
		}
		data = append(data, map[string]any{
			"companyName": r.name, "companyNmlsId": r.nmls, "gained": r.gained, "lost": r.lost,
			"net": r.gained - r.lost, "units": r.units, "volume": round(r.volume, 2), "avgLoanSize": avg,
			"volumeTruncated": false,
		})
	}
	return map[string]any{
		"data": data, "truncated": truncated,
		"window": map[string]any{"startDate": start.Format("2006-01-02"), "endDate": to, "months": months},
	}
}
