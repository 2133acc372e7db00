package lendgraphtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// Server is a running fake API. Its methods are safe for concurrent use.
type Server struct {
	// URL is the API base address, e.g. http://127.0.0.1:41234.
	URL string

	cfg     config
	api     *httptest.Server
	storage *httptest.Server
	extra   []*httptest.Server // listeners areas add (the search host)
	data    *Dataset
	secret  []byte // signs download links and search tokens

	ctx    context.Context // ends at Close; job workers watch it
	cancel context.CancelFunc
	wg     sync.WaitGroup // job workers

	mu       sync.Mutex
	offset   time.Duration // clock offset added by Advance
	orgs     map[string]*org
	callers  map[string]Caller // by key
	faults   []*faultRule
	requests []Request
	sent     map[string]*atomic.Int64 // body bytes sent, by listener
	nextID   atomic.Int64
	queries  *queryCache
	jobs     map[string]*fakeJob
	objects  map[string]*object

	area areaState // per-area stores, see areas.go
}

type config struct {
	seed        int64
	rows        map[string]int
	defaultRows int
	credits     float64
	linkTTL     time.Duration
	addr        string
	jobRate     map[string]float64 // rows per second by job kind
	settings    []Settings         // WithSettings, applied in order
	control     bool               // WithControlEndpoint
	s3          *S3Store           // delivery files go there when set
	missing     map[string]missingField
	// noStateShare overrides the share of records without a state.
	noStateShare *float64
}

// Option configures a Server.
type Option func(*config)

// WithSeed sets the seed of the synthetic dataset (default 1).
func WithSeed(seed int64) Option { return func(c *config) { c.seed = seed } }

// WithRows sets the number of records of one resource (agents, originators,
// companies, loans, properties, branches, sales, market).
func WithRows(resource string, n int) Option { return func(c *config) { c.rows[resource] = n } }

// WithDefaultRows sets the number of records of every resource not set by
// WithRows (default 10,000). Records are generated on demand, so a million
// rows cost no start-up time.
func WithDefaultRows(n int) Option { return func(c *config) { c.defaultRows = n } }

// WithCredits sets the starting credit balance of every organization
// (default 10,000,000).
func WithCredits(n float64) Option { return func(c *config) { c.credits = n } }

// WithLinkTTL sets how long a signed download link stays valid (default 15 minutes).
func WithLinkTTL(d time.Duration) Option { return func(c *config) { c.linkTTL = d } }

// WithAddr makes the API listen on addr (default 127.0.0.1:0, a free port).
// Listening on every interface (":8080", "0.0.0.0:8080"), Server.URL names
// 127.0.0.1, an address a client dials.
func WithAddr(addr string) Option { return func(c *config) { c.addr = addr } }

// WithJobRate sets how many rows a second the workers of a job kind
// ("enrichment", "delivery") handle; lower makes jobs last longer.
// SetJobRate changes it while the server runs.
func WithJobRate(kind string, rowsPerSecond float64) Option {
	return func(c *config) { c.jobRate[kind] = rowsPerSecond }
}

// jobKinds are the kinds of job whose pace can be set.
var jobKinds = []string{"enrichment", "delivery"}

// SetJobRate sets how many rows a second the workers of a job kind
// ("enrichment" or "delivery") handle from now on, running jobs included;
// 0 or less runs them as fast as they go. It panics on another kind.
func (s *Server) SetJobRate(kind string, rowsPerSecond float64) {
	if !slices.Contains(jobKinds, kind) {
		panic(fmt.Sprintf("lendgraphtest: SetJobRate: unknown job kind %q; kinds: %s", kind, strings.Join(jobKinds, ", ")))
	}
	s.mu.Lock()
	s.cfg.jobRate[kind] = rowsPerSecond
	s.mu.Unlock()
}

// SetLinkTTL sets how long the signed download links signed from now on
// stay valid (WithLinkTTL sets it at start).
func (s *Server) SetLinkTTL(d time.Duration) {
	s.mu.Lock()
	s.cfg.linkTTL = d
	s.mu.Unlock()
}

// WithMissingField makes every n-th record of a resource (indexes n-1,
// 2n-1, ...) lack field, in lists, details and deliveries alike: records
// without a state, say, for tests of what a query by that field misses.
func WithMissingField(resource, field string, n int) Option {
	return func(c *config) {
		if n > 0 {
			c.missing[resource] = missingField{field: field, every: n}
		}
	}
}

// WithNoStateShare sets the share of records without a state (of agents,
// originators, companies, loans, properties, branches and sales); the
// default is about one in a hundred, data as it comes. 0 gives every
// record a state, for tests whose queries split by state must cover
// everything.
func WithNoStateShare(share float64) Option {
	return func(c *config) { c.noStateShare = &share }
}

// Caller is one API key and the user and organization it belongs to.
type Caller struct {
	Key    string
	UserID string
	OrgID  string
}

// DefaultOrg is the organization of the default caller.
const DefaultOrg = "org_default"

// NewServer starts a fake API for the test and closes it when the test ends.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := Start(opts...)
	if err != nil {
		t.Fatalf("lendgraphtest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start starts a fake API outside a test (the CLI's "lendgraph fake").
// Close it when done.
func Start(opts ...Option) (*Server, error) {
	cfg := config{seed: 1, rows: map[string]int{}, defaultRows: 10_000, credits: 10_000_000,
		linkTTL: 15 * time.Minute, addr: "127.0.0.1:0",
		jobRate: map[string]float64{"enrichment": 20_000, "delivery": 200_000}, missing: map[string]missingField{}}
	for _, o := range opts {
		o(&cfg)
	}
	// Settings shape the dataset first; their run-time part is applied
	// once the server exists.
	for _, st := range cfg.settings {
		if err := st.checkStartup(); err != nil {
			return nil, fmt.Errorf("settings: %v", err)
		}
		if st.Credits != nil {
			if *st.Credits < 0 {
				return nil, fmt.Errorf("settings: credits: %v is negative", *st.Credits)
			}
			cfg.credits = *st.Credits
		}
		for _, o := range st.startupOptions() {
			o(&cfg)
		}
	}
	s := &Server{
		cfg:     cfg,
		orgs:    map[string]*org{},
		callers: map[string]Caller{},
		jobs:    map[string]*fakeJob{},
		objects: map[string]*object{},
		sent:    map[string]*atomic.Int64{},
		secret:  make([]byte, 32),
		queries: newQueryCache(64),
	}
	_, _ = rand.Read(s.secret)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.data = newDataset(cfg.seed, cfg.defaultRows, cfg.rows)
	s.data.missing = cfg.missing
	if cfg.noStateShare != nil {
		s.data.noStateShare = *cfg.noStateShare
	}
	s.area.init()
	s.newCallerLocked(DefaultOrg, "user_default")

	if cfg.s3 != nil {
		if err := cfg.s3.createBucket(context.Background()); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.addr, err)
	}
	s.api = &httptest.Server{Listener: ln, Config: &http.Server{Handler: s.wrap("api", s.apiMux())}}
	s.api.Start()
	s.URL = "http://" + reachableAddr(ln.Addr())
	s.storage = httptest.NewServer(s.wrap("storage", http.HandlerFunc(s.serveStorage)))
	s.startAreaListeners()
	for _, st := range cfg.settings {
		st.Seed, st.Rows, st.ResourceRows = nil, nil, nil
		if err := s.apply(st); err != nil {
			s.Close()
			return nil, fmt.Errorf("settings: %v", err)
		}
	}
	return s, nil
}

// reachableAddr is the address a client on this machine dials for a
// listener: its own, or loopback when it listens on every interface
// ("0.0.0.0:8080" and "[::]:8080", which Go listens on for both IPv4 and
// IPv6, are not addresses to send requests to).
func reachableAddr(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok || !ta.IP.IsUnspecified() {
		return a.String()
	}
	return (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: ta.Port}).String()
}

// Close stops the listeners and every job worker, and waits for them.
func (s *Server) Close() {
	s.cancel()
	s.api.Close()
	s.storage.Close()
	for _, e := range s.extra {
		e.Close()
	}
	s.wg.Wait()
	s.area.close()
}

// Client returns a client pointed at the fake with the default caller's key
// and no retry delays worth waiting for. opts are applied after, so they can
// override the key or anything else.
func (s *Server) Client(opts ...lendgraph.Option) *lendgraph.Client {
	base := []lendgraph.Option{lendgraph.WithBaseURL(s.URL), lendgraph.WithAPIKey(s.DefaultCaller().Key),
		lendgraph.WithRetryBackoff(time.Millisecond, 10*time.Millisecond)}
	c, err := lendgraph.NewClient(append(base, opts...)...)
	if err != nil {
		panic(fmt.Sprintf("lendgraphtest: %v", err))
	}
	return c
}

// DefaultCaller is the caller whose key Client uses.
func (s *Server) DefaultCaller() Caller {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.callers {
		if c.UserID == "user_default" {
			return c
		}
	}
	panic("lendgraphtest: default caller missing")
}

// NewCaller adds an API key for a new user in organization orgID (created
// with the default balance when new).
func (s *Server) NewCaller(orgID string) Caller {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newCallerLocked(orgID, fmt.Sprintf("user_%d", s.nextID.Add(1)))
}

func (s *Server) newCallerLocked(orgID, userID string) Caller {
	s.orgLocked(orgID)
	c := Caller{Key: "lg_test_" + randHex(12), UserID: userID, OrgID: orgID}
	s.callers[c.Key] = c
	return c
}

// Dataset returns the synthetic dataset the server serves.
func (s *Server) Dataset() *Dataset { return s.data }

// Now is the server's clock: real time plus everything Advance added.
func (s *Server) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nowLocked()
}

func (s *Server) nowLocked() time.Time { return time.Now().Add(s.offset) }

// Advance moves the server's clock forward (retention, link and token
// expiry follow it).
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	s.offset += d
	s.mu.Unlock()
}

// StorageURL is the address of the signed-link storage host.
func (s *Server) StorageURL() string { return s.storage.URL }

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newID returns a unique id with the given prefix.
func (s *Server) newID(prefix string) string {
	return fmt.Sprintf("%s_%06d%s", prefix, s.nextID.Add(1), randHex(4))
}

// --- organizations, credits, entitlements ---

type org struct {
	id           string
	credits      float64
	entitlements map[string]Entitlement
	ledger       []Debit
}

// Entitlement is an organization's bulk-delivery entitlement for one
// resource (key bulk-delivery.<resource>).
type Entitlement struct {
	// MaxRows is the row ceiling of one delivery.
	MaxRows int64 `json:"maxRows"`
	// Columns are the allowed columns; empty allows every column.
	Columns []string `json:"columns,omitempty"`
	// Filters are row filters ANDed into every delivery (field → value,
	// as in flatFilters).
	Filters map[string]any `json:"filters,omitempty"`
}

// Debit is one ledger entry: credits taken from an organization.
type Debit struct {
	ID     string
	OrgID  string
	UserID string
	// Reason says what was charged: "enrich", "enrich-bulk", "delivery", "crm-push".
	Reason string
	Amount float64
	At     time.Time
}

func (s *Server) orgLocked(id string) *org {
	o, ok := s.orgs[id]
	if !ok {
		o = &org{id: id, credits: s.cfg.credits, entitlements: map[string]Entitlement{}}
		s.orgs[id] = o
	}
	return o
}

// SetCredits sets an organization's balance.
func (s *Server) SetCredits(orgID string, n float64) {
	s.mu.Lock()
	s.orgLocked(orgID).credits = n
	s.mu.Unlock()
}

// Credits returns an organization's balance.
func (s *Server) Credits(orgID string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.orgLocked(orgID).credits
}

// Debits returns an organization's ledger, oldest first.
func (s *Server) Debits(orgID string) []Debit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Debit(nil), s.orgLocked(orgID).ledger...)
}

// Charged adds up an organization's debits of one reason ("delivery",
// ...): how many there are and the credits they took. A test counts what
// was charged here, at the ledger, not in the SDK's own figures.
func (s *Server) Charged(orgID, reason string) (debits int, credits float64) {
	for _, d := range s.Debits(orgID) {
		if d.Reason == reason {
			debits++
			credits += d.Amount
		}
	}
	return debits, credits
}

// SetEntitlement grants an organization the bulk-delivery entitlement of a
// resource. It panics, saying what is wrong, on a resource that offers no
// delivery, a MaxRows below 1, or columns and filters that name fields the
// resource does not have (see Dataset.Fields): such an entitlement would
// make deliveries silently empty or narrower than the test means.
func (s *Server) SetEntitlement(orgID, resource string, e Entitlement) {
	if err := s.setEntitlement(orgID, resource, &e); err != nil {
		panic("lendgraphtest: SetEntitlement: " + err.Error())
	}
}

// checkEntitlement checks an entitlement of a resource (nil: removing it).
func (s *Server) checkEntitlement(resource string, e *Entitlement) error {
	if !slices.Contains(deliveryResources, resource) {
		return fmt.Errorf("%q offers no bulk delivery; resources: %s", resource, strings.Join(deliveryResources, ", "))
	}
	if e == nil {
		return nil
	}
	if e.MaxRows < 1 {
		return fmt.Errorf("maxRows of %s must be at least 1, got %d", resource, e.MaxRows)
	}
	if err := s.data.checkFields("columns", resource, e.Columns); err != nil {
		return err
	}
	return s.data.checkFlat("filters", resource, e.Filters)
}

// setEntitlement checks and grants an entitlement; nil removes it.
func (s *Server) setEntitlement(orgID, resource string, e *Entitlement) error {
	if err := s.checkEntitlement(resource, e); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e == nil {
		delete(s.orgLocked(orgID).entitlements, resource)
	} else {
		s.orgLocked(orgID).entitlements[resource] = *e
	}
	return nil
}

// entitlementLocked returns the organization's entitlement for a resource.
func (s *Server) entitlementLocked(orgID, resource string) (Entitlement, bool) {
	e, ok := s.orgLocked(orgID).entitlements[resource]
	return e, ok
}

// debitLocked takes amount credits from the caller's organization and
// records it. Callers check the balance first where the reference says so.
func (s *Server) debitLocked(c Caller, reason string, amount float64) Debit {
	o := s.orgLocked(c.OrgID)
	o.credits -= amount
	d := Debit{ID: s.newID("ledger"), OrgID: c.OrgID, UserID: c.UserID, Reason: reason, Amount: amount, At: s.nowLocked()}
	o.ledger = append(o.ledger, d)
	return d
}

// --- HTTP plumbing ---

// Request is one request a listener received.
type Request struct {
	// Listener is "api", "storage" or "search".
	Listener string
	Method   string
	Path     string
	Query    string
	Header   http.Header
	Body     []byte
	At       time.Time
}

// Requests returns the requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ResetRequests forgets the requests received so far.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	s.requests = nil
	s.mu.Unlock()
}

// CountRequests counts received requests whose method matches (empty for
// any) and whose path matches pattern, in the syntax of InjectFault
// ("/v1/agents/{id}" or path.Match globs); it panics on a pattern that
// can never match, as InjectFault does.
func (s *Server) CountRequests(method, pattern string) int {
	rp := mustRoute("CountRequests", method, pattern)
	n := 0
	for _, r := range s.Requests() {
		if rp.match(r.Path) && (method == "" || r.Method == method) {
			n++
		}
	}
	return n
}

const maxLoggedBody = 1 << 20

// wrap logs the request, applies injected faults and tags the response
// with a request id.
func (s *Server) wrap(listener string, h http.Handler) http.Handler {
	sent := s.sent[listener]
	if sent == nil {
		sent = new(atomic.Int64)
		s.sent[listener] = sent
	}
	var control http.Handler
	if listener == "api" && s.cfg.control {
		control = s.controlHandler()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if control != nil && (strings.HasPrefix(r.URL.Path, ControlPrefix) || r.URL.Path+"/" == ControlPrefix) {
			control.ServeHTTP(w, r)
			return
		}
		w = &countingResponseWriter{ResponseWriter: w, n: sent}
		body, _ := io.ReadAll(io.LimitReader(r.Body, maxLoggedBody+1))
		logged := body
		if len(logged) > maxLoggedBody {
			logged = logged[:maxLoggedBody]
		}
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
		s.mu.Lock()
		s.requests = append(s.requests, Request{Listener: listener, Method: r.Method, Path: r.URL.Path,
			Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: logged, At: s.nowLocked()})
		f := s.takeFaultLocked(r.Method, r.URL.Path)
		now := s.nowLocked()
		s.mu.Unlock()
		w.Header().Set("X-Request-Id", fmt.Sprintf("req_%d", s.nextID.Add(1)))
		// The Date header follows the fake's clock (Advance), like the
		// expiry times it sends.
		w.Header().Set("Date", now.UTC().Format(http.TimeFormat))
		if f != nil {
			s.applyFault(w, r, f, h)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// BytesSent returns the response body bytes a listener ("api", "storage"
// or "search") has sent so far, what an injected DropMidBody, Trickle or
// DropBeforeResponse fault sends not included: for instance to tell how
// much of a file a resumed download fetched again.
func (s *Server) BytesSent(listener string) int64 {
	s.mu.Lock()
	n := s.sent[listener]
	s.mu.Unlock()
	if n == nil {
		return 0
	}
	return n.Load()
}

// countingResponseWriter counts the body bytes written through it.
type countingResponseWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingResponseWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// ReadFrom keeps the writer underneath's fast path (sendfile for a file
// on the storage host).
func (c *countingResponseWriter) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.ResponseWriter.(io.ReaderFrom); ok {
		n, err := rf.ReadFrom(r)
		c.n.Add(n)
		return n, err
	}
	return io.Copy(struct{ io.Writer }{c}, r)
}

// Flush and Hijack keep the writer underneath usable by handlers and faults.
func (c *countingResponseWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *countingResponseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(c.ResponseWriter).Hijack()
}

// Unwrap gives http.ResponseController the writer underneath.
func (c *countingResponseWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// writeJSON writes v as a JSON response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":"internal: `+err.Error()+`"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeError writes {error: msg} plus any extra fields.
func writeError(w http.ResponseWriter, status int, msg string, extra map[string]any) {
	body := map[string]any{"error": msg}
	for k, v := range extra {
		body[k] = v
	}
	writeJSON(w, status, body)
}

// readJSON decodes the request body into v, answering 400 on failure.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.ContentLength == 0 && r.Body == nil {
		return true
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading body: "+err.Error(), nil)
		return false
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return true
	}
	if err := json.Unmarshal(b, v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error(), nil)
		return false
	}
	return true
}

// authed wraps an API handler with the key check: x-api-key or
// Authorization: Bearer, 401 otherwise.
func (s *Server) authed(h func(w http.ResponseWriter, r *http.Request, c Caller)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("x-api-key")
		if key == "" {
			if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "Bearer ") {
				key = strings.TrimPrefix(a, "Bearer ")
			}
		}
		s.mu.Lock()
		c, ok := s.callers[key]
		s.mu.Unlock()
		if !ok {
			writeError(w, http.StatusUnauthorized, "unauthorized", nil)
			return
		}
		h(w, r, c)
	}
}

func (s *Server) apiMux() *http.ServeMux {
	mux := http.NewServeMux()
	s.routeResources(mux)
	s.routeEnrich(mux)
	s.routeDelivery(mux)
	s.routeSearch(mux)
	s.routeMarket(mux)
	s.routeAnalytics(mux)
	s.routeCRM(mux)
	s.routeSavedFilters(mux)
	s.routeLocations(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no route for "+r.Method+" "+r.URL.Path, nil)
	})
	return mux
}
