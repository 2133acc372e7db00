package lendgraphtest

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Record is one synthetic record: JSON-ready values (string, int64,
// float64, bool, []any, map[string]any).
type Record = map[string]any

// Resources lists the resource path segments the fake serves.
var Resources = []string{"agents", "originators", "companies", "loans", "properties", "branches", "sales", "market"}

// Dataset is the deterministic synthetic data behind the fake. Records are
// generated on demand from (seed, resource, index): the same seed gives the
// same records in every run, and a resource of a million rows costs nothing
// until it is read. The first query that filters, sorts or charts a
// resource reads every record of it once into an index of its scalar
// members (about 5 s of CPU and 34 MB for a million agents; see
// BENCHMARKS.md), from which totals, counts, charts and selections are
// answered without generating the records again. A Dataset is fixed once
// the server runs, so the index never goes stale.
type Dataset struct {
	seed    uint64
	sizes   map[string]int
	missing map[string]missingField // by resource: WithMissingField
	// noStateShare is the share of records without a state (WithNoStateShare).
	noStateShare float64

	schemaMu sync.Mutex
	schemas  map[string]*resourceSchema // by resource, see schemaOf

	indexMu sync.Mutex
	indexes map[string]*resourceIndex // by resource, see index
}

// missingField is a field that every n-th record of a resource lacks.
type missingField struct {
	field string
	every int
}

func newDataset(seed int64, def int, sizes map[string]int) *Dataset {
	d := &Dataset{seed: uint64(seed), sizes: map[string]int{}, noStateShare: defaultNoStateShare}
	for _, r := range Resources {
		n, ok := sizes[r]
		if !ok {
			n = def
		}
		d.sizes[r] = n
	}
	return d
}

// Len is the number of records of a resource (0 for an unknown one).
func (d *Dataset) Len(resource string) int { return d.sizes[resource] }

var idPrefix = map[string]string{
	"agents": "agt_", "loans": "loan_", "properties": "prop_", "branches": "br_", "sales": "sale_", "market": "mkt_",
}

// Numeric NMLS ids of originators and companies start at these bases.
const (
	originatorBase = 1_000_000
	companyBase    = 2_000_000
)

// ID returns the id of record i.
func (d *Dataset) ID(resource string, i int) string {
	switch resource {
	case "originators":
		return strconv.Itoa(originatorBase + i)
	case "companies":
		return strconv.Itoa(companyBase + i)
	}
	return idPrefix[resource] + padInt(i, 7)
}

// Index returns the index of the record with the given id.
func (d *Dataset) Index(resource, id string) (int, bool) {
	var n int
	var err error
	switch resource {
	case "originators", "companies":
		base := originatorBase
		if resource == "companies" {
			base = companyBase
		}
		n, err = strconv.Atoi(id)
		n -= base
	default:
		p, ok := idPrefix[resource]
		if !ok || !strings.HasPrefix(id, p) || len(id) != len(p)+7 {
			return 0, false
		}
		n, err = strconv.Atoi(id[len(p):])
	}
	if err != nil || n < 0 || n >= d.Len(resource) {
		return 0, false
	}
	return n, true
}

// Record returns the complete record i of a resource (nested detail
// included); Summary drops the detail-only members.
func (d *Dataset) Record(resource string, i int) Record {
	r := d.record(resource, i)
	if m, ok := d.missing[resource]; ok && r != nil && (i+1)%m.every == 0 {
		delete(r, m.field)
	}
	return r
}

func (d *Dataset) record(resource string, i int) Record {
	g := d.rng(resource, i)
	switch resource {
	case "agents":
		return d.agent(g, i)
	case "originators":
		return d.originator(g, i)
	case "companies":
		return d.company(g, i)
	case "loans":
		return d.loan(g, i)
	case "properties":
		return d.property(g, i)
	case "branches":
		return d.branch(g, i)
	case "sales":
		return d.sale(g, i)
	case "market":
		return d.market(g, i)
	}
	return nil
}

// detailOnly are the members only the detail endpoint returns.
var detailOnly = map[string][]string{
	"agents":      {"recentTransactions"},
	"originators": {"licenses"},
	"companies":   {"branchesPreview"},
	"loans":       {"parties"},
	"properties":  {"history"},
	"branches":    {"managers"},
	"sales":       {"parties"},
	"market":      {"monthly"},
}

// Summary returns the list (summary) form of record i.
func (d *Dataset) Summary(resource string, i int) Record {
	r := d.Record(resource, i)
	for _, k := range detailOnly[resource] {
		delete(r, k)
	}
	return r
}

// rng is a splitmix64 stream keyed by seed, resource and index.
type rng struct{ s uint64 }

func (d *Dataset) rng(resource string, i int) *rng {
	h := d.seed*0x9E3779B97F4A7C15 ^ uint64(i+1)*0xBF58476D1CE4E5B9
	for _, c := range resource {
		h = (h ^ uint64(c)) * 0x100000001B3
	}
	return &rng{s: h}
}

func (g *rng) next() uint64 {
	g.s += 0x9E3779B97F4A7C15
	z := g.s
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

func (g *rng) intn(n int) int               { return int(g.next() % uint64(n)) }
func (g *rng) pick(xs []string) string      { return xs[g.intn(len(xs))] }
func (g *rng) float(lo, hi float64) float64 { return lo + (hi-lo)*float64(g.next()>>11)/float64(1<<53) }
func (g *rng) chance(p float64) bool        { return g.float(0, 1) < p }
func (g *rng) rangeInt(lo, hi int) int64    { return int64(lo + g.intn(hi-lo+1)) }
func round(f float64, places int) float64 {
	p := 1.0
	for range places {
		p *= 10
	}
	return float64(int64(f*p+0.5)) / p
}

var (
	firstNames = []string{"James", "Mary", "Robert", "Patricia", "John", "Jennifer", "Michael", "Linda", "David", "Elizabeth",
		"William", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah", "Carlos", "Karen", "Daniel", "Maria",
		"Matthew", "Nancy", "Anthony", "Lisa", "Mark", "Betty", "Steven", "Sandra", "Andrew", "Ashley", "Joshua", "Emily", "Kevin", "Michelle"}
	lastNames = []string{"Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez",
		"Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin", "Lee", "Perez",
		"Thompson", "White", "Harris", "Sanchez", "Clark", "Ramirez", "Lewis", "Robinson", "Walker", "Young", "Allen", "King", "Wright", "Smithson"}
	streets = []string{"Main St", "Oak Ave", "Maple Dr", "Cedar Ln", "Pine St", "Elm St", "Washington Blvd", "Lake View Rd", "Sunset Blvd", "Park Ave", "Hillcrest Dr", "River Rd"}
	// states lists the 50 states and DC, weighted roughly by population
	// (California about one record in eight), each with a few cities
	// whose names are unique across states.
	stateTable = []struct {
		code   string
		weight int
		cities []string
	}{
		{"CA", 118, []string{"Los Angeles", "San Diego", "San Jose", "Sacramento", "Fresno"}},
		{"TX", 90, []string{"Houston", "Dallas", "Austin", "San Antonio", "Fort Worth"}},
		{"FL", 66, []string{"Miami", "Orlando", "Tampa", "Jacksonville"}},
		{"NY", 59, []string{"New York", "Buffalo", "Rochester", "Albany"}},
		{"PA", 39, []string{"Philadelphia", "Pittsburgh", "Allentown"}},
		{"IL", 38, []string{"Chicago", "Naperville", "Springfield"}},
		{"OH", 35, []string{"Columbus", "Cleveland", "Cincinnati"}},
		{"GA", 33, []string{"Atlanta", "Savannah", "Augusta"}},
		{"NC", 32, []string{"Charlotte", "Raleigh", "Durham"}},
		{"MI", 30, []string{"Detroit", "Grand Rapids", "Ann Arbor"}},
		{"NJ", 28, []string{"Newark", "Jersey City", "Trenton"}},
		{"VA", 26, []string{"Virginia Beach", "Richmond", "Arlington"}},
		{"WA", 23, []string{"Seattle", "Spokane", "Tacoma"}},
		{"AZ", 22, []string{"Phoenix", "Tucson", "Mesa", "Scottsdale"}},
		{"TN", 21, []string{"Nashville", "Memphis", "Knoxville"}},
		{"MA", 21, []string{"Boston", "Worcester", "Cambridge"}},
		{"IN", 20, []string{"Indianapolis", "Fort Wayne", "Evansville"}},
		{"MD", 19, []string{"Baltimore", "Annapolis", "Rockville"}},
		{"MO", 18, []string{"Kansas City", "St. Louis", "Columbia"}},
		{"WI", 18, []string{"Milwaukee", "Madison", "Green Bay"}},
		{"CO", 17, []string{"Denver", "Boulder", "Colorado Springs"}},
		{"MN", 17, []string{"Minneapolis", "Saint Paul", "Duluth"}},
		{"SC", 16, []string{"Charleston", "Greenville", "Myrtle Beach"}},
		{"AL", 15, []string{"Birmingham", "Montgomery", "Huntsville"}},
		{"LA", 14, []string{"New Orleans", "Baton Rouge", "Shreveport"}},
		{"KY", 13, []string{"Louisville", "Lexington"}},
		{"OR", 13, []string{"Portland", "Eugene", "Salem"}},
		{"OK", 12, []string{"Oklahoma City", "Tulsa"}},
		{"CT", 11, []string{"Hartford", "New Haven", "Stamford"}},
		{"UT", 10, []string{"Salt Lake City", "Provo", "Ogden"}},
		{"IA", 10, []string{"Des Moines", "Cedar Rapids"}},
		{"NV", 10, []string{"Las Vegas", "Reno", "Henderson"}},
		{"AR", 9, []string{"Little Rock", "Fayetteville"}},
		{"MS", 9, []string{"Jackson", "Gulfport"}},
		{"KS", 9, []string{"Wichita", "Overland Park"}},
		{"NM", 6, []string{"Albuquerque", "Santa Fe"}},
		{"NE", 6, []string{"Omaha", "Lincoln"}},
		{"ID", 6, []string{"Boise", "Idaho Falls"}},
		{"WV", 5, []string{"Huntington", "Morgantown"}},
		{"HI", 4, []string{"Honolulu", "Hilo"}},
		{"NH", 4, []string{"Manchester", "Nashua"}},
		{"ME", 4, []string{"Bangor", "Lewiston"}},
		{"MT", 3, []string{"Billings", "Missoula"}},
		{"RI", 3, []string{"Providence", "Warwick"}},
		{"DE", 3, []string{"Wilmington", "Dover"}},
		{"SD", 3, []string{"Sioux Falls", "Rapid City"}},
		{"ND", 2, []string{"Fargo", "Bismarck"}},
		{"AK", 2, []string{"Anchorage", "Fairbanks"}},
		{"DC", 2, []string{"Washington"}},
		{"VT", 2, []string{"Burlington", "Montpelier"}},
		{"WY", 2, []string{"Cheyenne", "Casper"}},
	}
	states, stateCity, stateWeights = buildStates()
	lenderWords                     = []string{"Summit", "Pioneer", "Liberty", "Heritage", "Cornerstone", "Guaranteed", "Premier", "Keystone", "Harbor", "Evergreen", "Union", "First"}
	lenderKinds                     = []string{"Mortgage", "Home Loans", "Bank", "Credit Union", "Lending", "Financial"}
	titleNames                      = []string{"First American Title", "First American Title Co", "Fidelity National Title", "Fidelity Natl Title Inc", "Old Republic Title", "Stewart Title", "Chicago Title Company", "Chicago Title LLC", "None Available", "none availble", "unknown", "n/a", "Attorney", "Accommodation", "WFG Title", "ab"}
	brokerages                      = []string{"Keller Williams", "RE/MAX", "Coldwell Banker", "Century 21", "Compass", "eXp Realty", "Redfin", "Berkshire Hathaway HomeServices"}
	propertyTypes                   = []string{"single_family", "condo", "townhouse", "multi_family", "land"}
	txTypes                         = []string{"purchase", "refinance", "heloc", "construction"}
	loanTypes                       = []string{"conventional", "fha", "va", "usda", "jumbo"}
	categories                      = []string{"BANK", "CU", "OTHER"}
)

// epoch is the fixed end of the synthetic date range, so data does not
// change with the wall clock.
var epoch = time.Date(2026, 10, 31, 0, 0, 0, 0, time.UTC)

func (g *rng) date(daysBack int) string {
	k := g.intn(daysBack)
	if k < len(pastDays) {
		return pastDays[k]
	}
	return epoch.AddDate(0, 0, -k).Format("2006-01-02")
}

// pastDays[k] is the date k days before epoch (YYYY-MM-DD), for the spans
// date draws from: formatted once rather than for every record.
var pastDays = func() []string {
	out := make([]string, 5000)
	for k := range out {
		out[k] = epoch.AddDate(0, 0, -k).Format("2006-01-02")
	}
	return out
}()

// padInt formats n in decimal, with leading zeros to width digits (as
// fmt's %0*d does for a non-negative n), without fmt's cost.
func padInt(n, width int) string {
	var buf [20]byte
	b := strconv.AppendInt(buf[:0], int64(n), 10)
	if len(b) >= width {
		return string(b)
	}
	out := make([]byte, width)
	z := width - len(b)
	for k := range z {
		out[k] = '0'
	}
	copy(out[z:], b)
	return string(out)
}

// buildStates derives the state codes, their cities and the cumulative
// weights place draws from.
func buildStates() (codes []string, cities map[string][]string, cum []int) {
	cities = map[string][]string{}
	total := 0
	for _, st := range stateTable {
		codes = append(codes, st.code)
		cities[st.code] = st.cities
		total += st.weight
		cum = append(cum, total)
	}
	return codes, cities, cum
}

// pickState draws a state by weight.
func (g *rng) pickState() string {
	n := g.intn(stateWeights[len(stateWeights)-1])
	k, _ := slices.BinarySearch(stateWeights, n+1)
	return states[k]
}

// place draws a state (by weight), one of its cities and a zip code.
func (g *rng) place() (state, city, zip string) {
	state = g.pickState()
	city = g.pick(stateCity[state])
	zip = padInt(10000+g.intn(89999), 5)
	return
}

// defaultNoStateShare is the share of records (of the resources in
// lacksState) that carry no state at all, unless WithNoStateShare says
// otherwise: data as it comes, so that a query split by state can be
// shown not to cover everything.
const defaultNoStateShare = 0.01

// lacksState lists the resources some of whose records have no state.
var lacksState = map[string]bool{"agents": true, "originators": true, "companies": true, "loans": true,
	"properties": true, "branches": true, "sales": true}

// HasState reports whether record i of a resource has a state; about one
// record in a hundred of agents, originators, companies, loans,
// properties, branches and sales has none (the member is absent).
func (d *Dataset) HasState(resource string, i int) bool {
	return !lacksState[resource] || d.noStateShare <= 0 || !d.rng(resource+"-no-state", i).chance(d.noStateShare)
}

// placeOf is g.place for record i of a resource, with the state blanked
// for the records that have none.
func (d *Dataset) placeOf(g *rng, resource string, i int) (state, city, zip string) {
	state, city, zip = g.place()
	if !d.HasState(resource, i) {
		state = ""
	}
	return
}

// setState sets rec[key] to state, leaving the member out when empty.
func setState(rec Record, key, state string) Record {
	if state != "" {
		rec[key] = state
	}
	return rec
}

// present returns the non-empty values as a JSON array.
func present(vs ...string) []any {
	out := []any{}
	for _, v := range vs {
		if v != "" && !slices.Contains(out, any(v)) {
			out = append(out, v)
		}
	}
	return out
}

func (d *Dataset) companyName(i int) string {
	g := d.rng("companies", i)
	return g.pick(lenderWords) + " " + g.pick(lenderKinds)
}

func (d *Dataset) agent(g *rng, i int) Record {
	first, last := g.pick(firstNames), g.pick(lastNames)
	state, city, zip := d.placeOf(g, "agents", i)
	n := g.rangeInt(0, 120)
	recent := []any{}
	for k := range min(int(n), 3) {
		recent = append(recent, map[string]any{"propertyId": d.ID("properties", (i*7+k)%max(d.Len("properties"), 1)), "date": g.date(700), "price": round(g.float(150e3, 2e6), 0)})
	}
	return setState(Record{
		"id": d.ID("agents", i), "firstName": first, "lastName": last, "fullName": first + " " + last,
		"email": strings.ToLower(first+"."+last) + strconv.Itoa(i) + "@example.com",
		"phone": "+1" + padInt(200+g.intn(700), 3) + "555" + padInt(g.intn(10000), 4),
		"city":  city, "zip": zip,
		"brokerage": g.pick(brokerages), "transactionCount": n,
		"volume":              round(float64(n)*g.float(250e3, 900e3), 2),
		"lastTransactionDate": g.date(900), "licenseNumber": state + padInt(g.intn(1e8), 8),
		"isTeamLead":         g.chance(0.1),
		"office":             setState(map[string]any{"name": g.pick(brokerages) + " " + city, "city": city}, "state", state),
		"tags":               []any{g.pick([]string{"luxury", "first-time-buyers", "investors", "relocation"})},
		"recentTransactions": recent,
	}, "state", state)
}

func (d *Dataset) originator(g *rng, i int) Record {
	first, last := g.pick(firstNames), g.pick(lastNames)
	state, city, _ := d.placeOf(g, "originators", i)
	comp := g.intn(max(d.Len("companies"), 1))
	st2 := g.pickState()
	loans := g.rangeInt(0, 400)
	licenses := []any{map[string]any{"state": st2, "active": g.chance(0.8)}}
	if state != "" {
		licenses = append([]any{map[string]any{"state": state, "active": true}}, licenses...)
	}
	return setState(Record{
		"id": d.ID("originators", i), "nmlsId": d.ID("originators", i), "firstName": first, "lastName": last,
		"fullName": first + " " + last, "city": city,
		"states": present(state, st2), "cities": []any{city},
		"companyName": d.companyName(comp), "companyNmlsId": d.ID("companies", comp),
		"title":     g.pick([]string{"Loan Officer", "Senior Loan Officer", "Branch Manager", "Mortgage Advisor"}),
		"loanCount": loans, "volume": round(float64(loans)*g.float(200e3, 650e3), 2),
		"lastLoanDate": g.date(900),
		"licenses":     licenses,
	}, "state", state)
}

func (d *Dataset) company(g *rng, i int) Record {
	state, city, _ := d.placeOf(g, "companies", i)
	cat := g.pick(categories)
	return setState(Record{
		"id": d.ID("companies", i), "nmlsId": d.ID("companies", i), "name": d.companyName(i),
		"city": city, "category": cat,
		"channel":         map[string]string{"BANK": "Bank", "CU": "Credit Union", "OTHER": g.pick([]string{"Broker", "Retail"})}[cat],
		"originatorCount": g.rangeInt(1, 900), "volume": round(g.float(1e6, 5e9), 2),
		"website":         "https://www.example-lender-" + strconv.Itoa(i) + ".com",
		"branchesPreview": []any{setState(map[string]any{"city": city}, "state", state)},
	}, "state", state)
}

func (d *Dataset) loan(g *rng, i int) Record {
	state, city, zip := d.placeOf(g, "loans", i)
	comp := g.intn(max(d.Len("companies"), 1))
	orig := g.intn(max(d.Len("originators"), 1))
	return setState(Record{
		"id": d.ID("loans", i), "city": city, "zip": zip,
		"mortgageAmount": round(g.float(80e3, 1.8e6), 0), "mortgageDate": g.date(1400),
		"transactionType": g.pick(txTypes), "interestRate": round(g.float(2.5, 8.5), 3),
		"loanType": g.pick(loanTypes), "lenderName": d.companyName(comp), "lenderNmlsId": d.ID("companies", comp),
		"originatorNmlsId": d.ID("originators", orig), "propertyId": d.ID("properties", i%max(d.Len("properties"), 1)),
		"titleCompany": g.pick(titleNames), "address": strconv.Itoa(100+g.intn(9800)) + " " + g.pick(streets),
		"parties": map[string]any{"borrower": g.pick(firstNames) + " " + g.pick(lastNames), "lender": d.companyName(comp)},
	}, "state", state)
}

// property i has no usable address on the parcel when this is true; the
// enrichment then falls back to loan i (and fails with 400 when that loan
// does not exist either).
func (d *Dataset) propertyLacksAddress(i int) bool {
	return d.rng("properties-address", i).chance(0.04)
}

func (d *Dataset) property(g *rng, i int) Record {
	state, city, zip := d.placeOf(g, "properties", i)
	street := strconv.Itoa(100+g.intn(9800)) + " " + g.pick(streets)
	if d.propertyLacksAddress(i) {
		street = ""
	}
	owner := g.pick(firstNames) + " " + g.pick(lastNames)
	return setState(Record{
		"id": d.ID("properties", i), "street": street, "city": city, "county": countyOf[city] + " County", "zip": zip,
		"ownerName": owner, "propertyType": g.pick(propertyTypes),
		"beds": g.rangeInt(1, 6), "baths": float64(g.rangeInt(2, 9)) / 2, "sqft": g.rangeInt(500, 6000),
		"yearBuilt": g.rangeInt(1900, 2025), "estimatedValue": round(g.float(90e3, 3.5e6), 0),
		"lastSaleDate": g.date(3000), "lastSaleAmount": round(g.float(60e3, 3e6), 0),
		"ownerOccupied": g.chance(0.7),
		"history":       []any{map[string]any{"event": "sale", "date": g.date(5000)}},
	}, "state", state)
}

func (d *Dataset) branch(g *rng, i int) Record {
	state, city, zip := d.placeOf(g, "branches", i)
	comp := i % max(d.Len("companies"), 1)
	return setState(Record{
		"id": d.ID("branches", i), "branchNmlsId": strconv.Itoa(3_000_000 + i), "name": d.companyName(comp) + " - " + city,
		"companyName": d.companyName(comp), "companyNmlsId": d.ID("companies", comp),
		"street": strconv.Itoa(100+g.intn(9800)) + " " + g.pick(streets), "city": city, "postalCode": zip,
		"isAuthorized": g.chance(0.9), "licensedStates": present(state, g.pickState()),
		"location":   map[string]any{"lat": round(g.float(25, 48), 5), "lon": round(g.float(-123, -71), 5)},
		"tradeNames": []any{d.companyName(comp)},
		"managers":   []any{map[string]any{"name": g.pick(firstNames) + " " + g.pick(lastNames)}},
	}, "state", state)
}

func (d *Dataset) sale(g *rng, i int) Record {
	state, city, _ := d.placeOf(g, "sales", i)
	return setState(Record{
		"id": d.ID("sales", i), "propertyId": d.ID("properties", i%max(d.Len("properties"), 1)),
		"saleDate": g.date(1400), "saleAmount": round(g.float(60e3, 3e6), 0), "city": city,
		"buyerName": g.pick(firstNames) + " " + g.pick(lastNames), "sellerName": g.pick(firstNames) + " " + g.pick(lastNames),
		"agentId": d.ID("agents", g.intn(max(d.Len("agents"), 1))),
		"parties": map[string]any{"buyerAgent": g.pick(firstNames), "listingAgent": g.pick(firstNames)},
	}, "state", state)
}

func (d *Dataset) market(g *rng, i int) Record {
	state, city, _ := g.place()
	return Record{
		"id": d.ID("market", i), "cbsaCode": strconv.Itoa(10000 + i), "name": city + ", " + state, "state": state,
		"loanCount": g.rangeInt(100, 90000), "volume": round(g.float(1e7, 9e10), 2),
		"medianLoanAmount": round(g.float(150e3, 900e3), 0), "periodEnd": g.date(400),
		"monthly": []any{map[string]any{"month": "2026-09", "loans": g.rangeInt(10, 9000)}},
	}
}

// dateField is the member that period filters look at, per resource.
var dateField = map[string]string{
	"agents": "lastTransactionDate", "originators": "lastLoanDate", "loans": "mortgageDate",
	"sales": "saleDate", "properties": "lastSaleDate", "market": "periodEnd",
}
