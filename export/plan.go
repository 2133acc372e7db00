package export

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// Source is what an export needs of a resource service: its list (for the
// totals that size the shards), its bulk delivery, and the name of the
// resource it delivers (its path segment, "agents"), which names the
// plan's resource. The services of the resources that offer delivery
// satisfy it: c.Agents, c.Originators, c.Companies, c.Loans, c.Properties
// and c.Branches. When the service also has an analytics chart (c.Agents,
// c.Originators and c.Loans through lendgraph.AnalyticsAPI, c.Properties
// through AllChart) the planner lists a field's values from it.
type Source[T any] interface {
	List(ctx context.Context, req *lendgraph.ListRequest, opts ...lendgraph.Option) (*lendgraph.Page[T], error)
	lendgraph.DelivererAPI[T]
	// Resource is the path segment of the resource delivered ("agents").
	Resource() string
}

// PlanVersion is the version of the plan, records and manifest this
// package writes.
const PlanVersion = 2

// ErrPlanChanged is the error (errors.Is) of a plan whose content is not
// what was planned: edited, cut short, or put together by hand. Its Digest
// no longer matches it, and it is refused before anything is submitted.
var ErrPlanChanged = errors.New("export: the plan was changed after it was planned")

// Plan is an export split into shards, each small enough for one delivery,
// whose totals were proved to add up to the whole query. It is a plain
// value: print it, store it as JSON (Plan.Write puts it in the export's
// storage), hand one shard to each machine of a workflow
// (RunOptions.Shards). Its Digest seals it: a plan edited after planning
// does not decode (UnmarshalJSON), and Run refuses it.
type Plan struct {
	Version int `json:"version"`
	// Resource is the resource path segment ("agents").
	Resource string `json:"resource"`
	// By are the partition fields the layout uses, outermost first: the
	// fields asked for (ByRequested) up to the last one a shard needed.
	By          []string `json:"by"`
	ByRequested []string `json:"byRequested"`
	// Request is the query being exported: filters, period, sort, fields
	// and format (Limit is always 0).
	Request lendgraph.DeliveryRequest `json:"request"`
	// Total is the list total of the whole query when the plan was made.
	Total int64 `json:"total"`
	// MaxRows is the row ceiling of one delivery, and MaxRowsFrom where it
	// came from: "user", "delivery_exceeds_max_rows", "entitlement_missing",
	// "limit validation" or "job handle".
	MaxRows     int64  `json:"maxRows"`
	MaxRowsFrom string `json:"maxRowsFrom"`
	// CreditsPerRow is the price of one delivered row when known (given in
	// PlanOptions); zero when unknown.
	CreditsPerRow float64 `json:"creditsPerRow,omitempty"`
	// IncludeMissing says whether records without a value of a partition
	// field have shards of their own (under MissingValue).
	IncludeMissing bool `json:"includeMissing,omitempty"`
	// AllowEmpty says the plan may have no shard (PlanOptions.AllowEmpty):
	// Run then commits a dataset of no files.
	AllowEmpty bool      `json:"allowEmpty,omitempty"`
	PlannedAt  time.Time `json:"plannedAt"`
	// Notes are things the planner wants the user to know (a ceiling probe
	// the service accepted, say).
	Notes []string `json:"notes,omitempty"`
	// Shards are in directory order.
	Shards []Shard `json:"shards"`
	// Digest is the sha256 of everything above, set by NewPlan: a plan
	// whose content no longer matches it was changed after planning
	// (ErrPlanChanged).
	Digest string `json:"digest"`
}

// Shard is one delivery of an export.
type Shard struct {
	// Name is the shard's directory under the export directory, one
	// key=value per partition field: "state=CA/city=Los Angeles".
	Name string `json:"name"`
	// Keys are the partition values, outermost first. Every row the
	// shard's delivery lands must hold them.
	Keys []Key `json:"keys"`
	// Rows is the list total of the shard's query when the plan was made.
	Rows int64 `json:"rows"`
	// File is the path of the landed file, relative to the export's
	// storage: Name + "/part-00000" + the format's extension.
	File string `json:"file"`
	// Request is the delivery request submitted for the shard.
	Request lendgraph.DeliveryRequest `json:"request"`
}

// Key is one partition value of a shard.
type Key struct {
	Field string `json:"field"`
	// Value is the field's value; nil when Missing.
	Value any `json:"value,omitempty"`
	// Missing marks the shard of the records without a value of Field
	// (or with a value the listing did not return): its directory value is
	// MissingValue.
	Missing bool `json:"missing,omitempty"`
}

// EstimatedRows is the sum of the shards' rows.
func (p *Plan) EstimatedRows() int64 {
	var n int64
	for _, s := range p.Shards {
		n += s.Rows
	}
	return n
}

// EstimatedCredits is the credits the export is expected to cost, and
// whether the price per row is known.
func (p *Plan) EstimatedCredits() (float64, bool) {
	if p.CreditsPerRow <= 0 {
		return 0, false
	}
	return float64(p.EstimatedRows()) * p.CreditsPerRow, true
}

// Shard returns the shard called name.
func (p *Plan) Shard(name string) (*Shard, bool) {
	for i := range p.Shards {
		if p.Shards[i].Name == name {
			return &p.Shards[i], true
		}
	}
	return nil, false
}

// index is the position of the shard called name, -1 when there is none.
func (p *Plan) index(name string) int {
	return slices.IndexFunc(p.Shards, func(s Shard) bool { return s.Name == name })
}

// plainPlan is a Plan without its JSON methods.
type plainPlan Plan

// canonical is v as JSON after a round trip through JSON, so that a value
// in memory (an int filter value, say) and the same value read back (a
// float64) give the same bytes.
func canonical(v, into any) []byte {
	b, _ := json.Marshal(v)
	if json.Unmarshal(b, into) == nil {
		b, _ = json.Marshal(into)
	}
	return b
}

// digest is the sha256 of the plan's content, its Digest left out.
func (p *Plan) digest() string {
	q := plainPlan(*p)
	q.Digest = ""
	h := sha256.Sum256(canonical(q, new(plainPlan)))
	return hex.EncodeToString(h[:])
}

// fingerprint identifies what the plan delivers: the resource, the query
// and every shard's request and file. Rows, dates and the ceiling are left
// out: a plan is the same plan whatever its estimates. The records of a
// storage carry it, so that a record of another plan is never taken for
// one of this plan.
func (p *Plan) fingerprint() string {
	type shard struct {
		Name    string
		File    string
		Request lendgraph.DeliveryRequest
	}
	type fp struct {
		Resource string
		By       []string
		Request  lendgraph.DeliveryRequest
		Shards   []shard
	}
	v := fp{Resource: p.Resource, By: p.By, Request: p.Request}
	for _, s := range p.Shards {
		v.Shards = append(v.Shards, shard{s.Name, s.File, s.Request})
	}
	h := sha256.Sum256(canonical(v, new(fp)))
	return hex.EncodeToString(h[:16])
}

// describe is a one-line summary of the plan for messages.
func (p *Plan) describe() string {
	return fmt.Sprintf("%s by %s, %d shards, %s", p.Resource, strings.Join(p.By, ","), len(p.Shards), p.Request.Format)
}

// UnmarshalJSON decodes a plan and checks it: its version, its shards'
// names and files, and its Digest, which must match its content (a plan
// changed after planning is an error matching ErrPlanChanged).
func (p *Plan) UnmarshalJSON(data []byte) error {
	var q plainPlan
	if err := json.Unmarshal(data, &q); err != nil {
		return err
	}
	pp := Plan(q)
	if err := pp.check(); err != nil {
		return err
	}
	*p = pp
	return nil
}

// check validates a plan: what NewPlan makes, unchanged since.
func (p *Plan) check() error {
	if p.Version != PlanVersion {
		return fmt.Errorf("export: plan version %d; this SDK reads version %d: plan the export again", p.Version, PlanVersion)
	}
	if p.Digest == "" {
		return fmt.Errorf("%w: it has no digest (a plan is made by NewPlan, not by hand)", ErrPlanChanged)
	}
	if p.digest() != p.Digest {
		return fmt.Errorf("%w: its digest does not match its content (edited, or cut short?): plan the export again", ErrPlanChanged)
	}
	if p.Resource == "" || len(p.By) == 0 {
		return errors.New("export: the plan names no resource or no partition field")
	}
	seen := map[string]bool{}
	for _, s := range p.Shards {
		if s.Name == "" || s.File == "" || seen[s.Name] {
			return fmt.Errorf("export: the plan's shard %q: empty or repeated name, or no file", s.Name)
		}
		if path.Clean(s.File) != s.File || strings.HasPrefix(s.File, "../") || path.IsAbs(s.File) || strings.HasPrefix(path.Base(s.File), ".") || strings.HasPrefix(s.File, "_") {
			return fmt.Errorf("export: the plan's shard %q: file %q is not a path inside the export", s.Name, s.File)
		}
		seen[s.Name] = true
	}
	return nil
}

// Write stores the plan in st as PlanFile, for the runs of an export to
// share (Run writes it too when it is absent). A plan already there is
// kept when it is the same plan (the same query, shards and files); another
// plan is replaced only when nothing was submitted from it (no shard
// claimed or landed), and is otherwise a *PlanMismatchError.
func (p *Plan) Write(ctx context.Context, st *Storage) error {
	if err := checkStorage(st); err != nil {
		return err
	}
	if err := p.check(); err != nil {
		return invalid("plan", "%v", err)
	}
	_, err := writePlan(ctx, st, p, true)
	return err
}

// writePlan writes p as st's plan when st has none (an exclusive write: of
// two writers, one writes and the other compares) and returns the plan st
// holds. replace lets a plan nothing was submitted from give way to p.
func writePlan(ctx context.Context, st *Storage, p *Plan, replace bool) (*Plan, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	data = append(data, '\n')
	for range 3 {
		have, err := ReadPlan(ctx, st)
		switch {
		case errors.Is(err, ErrNoPlan):
			err := st.b.put(ctx, PlanFile, data, true)
			if errors.Is(err, errExists) {
				continue // another writer was first: compare
			}
			if err != nil {
				return nil, fmt.Errorf("export: writing %s: %w", PlanFile, err)
			}
			return p, nil
		case err != nil:
			return nil, err
		case have.fingerprint() == p.fingerprint():
			return have, nil
		}
		mismatch := &PlanMismatchError{Dest: st.String(), Want: have.describe(), Got: p.describe()}
		if !replace {
			return nil, mismatch
		}
		used, err := submittedFrom(ctx, st)
		if err != nil {
			return nil, err
		}
		if used {
			mismatch.Submitted = true
			return nil, mismatch
		}
		if err := st.b.put(ctx, PlanFile, data, false); err != nil {
			return nil, fmt.Errorf("export: writing %s: %w", PlanFile, err)
		}
		return p, nil
	}
	return nil, fmt.Errorf("export: %s kept changing while it was written", PlanFile)
}

// submittedFrom reports whether any shard of st was ever claimed or landed.
func submittedFrom(ctx context.Context, st *Storage) (bool, error) {
	for _, dir := range []string{claimsDir, recordsDir} {
		keys, err := st.b.list(ctx, dir)
		if err != nil {
			return false, fmt.Errorf("export: listing %s: %w", dir, err)
		}
		if len(keys) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// ErrNoPlan is the error (errors.Is) of ReadPlan for a storage that holds
// no plan (no PlanFile: nothing was planned or run there).
var ErrNoPlan = errors.New("export: no " + PlanFile + " there: not an export")

// ReadPlan reads the plan of the export in st (PlanFile), checked as
// UnmarshalJSON checks it. A storage without one is an error matching
// ErrNoPlan (and fs.ErrNotExist); any other failure to read it is not.
func ReadPlan(ctx context.Context, st *Storage) (*Plan, error) {
	if err := checkStorage(st); err != nil {
		return nil, err
	}
	data, err := st.b.read(ctx, PlanFile)
	if isNotFound(err) {
		return nil, fmt.Errorf("%w (%s): %w", ErrNoPlan, st, err)
	}
	if err != nil {
		return nil, fmt.Errorf("export: reading %s: %w", PlanFile, err)
	}
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if errors.As(err, &syntax) || errors.As(err, &typ) {
			// Not JSON of a plan: cut short or written over.
			return nil, fmt.Errorf("%w: %s in %s does not decode (cut short?): %v: plan the export again", ErrPlanChanged, PlanFile, st, err)
		}
		return nil, fmt.Errorf("export: %s in %s: %w", PlanFile, st, err)
	}
	return &p, nil
}

// PlanOptions tune NewPlan.
type PlanOptions struct {
	// By are the partition fields, outermost first: "state" is the natural
	// first key; a second one ("city") splits the shards that are still
	// above the row ceiling. When any shard needs the next field, every
	// shard is split by it, so that every file sits at the same depth
	// (DuckDB and Spark expect one directory level per partition column).
	// When the request names Fields, the By fields are delivered too
	// (DeliveredFields), so that each file holds its partition values.
	By []string
	// MaxRows is the row ceiling of one delivery. Zero learns it from the
	// service: a submit with an impossible Limit, which the service refuses
	// with the ceiling in its 400 body; failing that, a submit of the whole
	// query, refused with 400 delivery_exceeds_max_rows (or 403
	// entitlement_missing) when it is above the ceiling. When the service
	// accepts such a probe (the whole query fits in one delivery) the job
	// is cancelled at once, before it can complete: cancelled jobs are
	// never charged; its handle's maxRows is the ceiling.
	MaxRows int64
	// Values gives the values of a partition field instead of listing them
	// from the service's chart. Records whose value is not listed fall in
	// no shard, which the coverage check reports.
	Values map[string][]any
	// IncludeMissing adds, for each split, a shard of the records whose
	// value of the field is none of the values listed (records without
	// the field): its directory value is MissingValue, which DuckDB and
	// Spark read as NULL.
	IncludeMissing bool
	// Concurrency bounds the list and chart requests in flight while
	// sizing (default 4).
	Concurrency int
	// CreditsPerRow is the price of one delivered row, for the estimate
	// (the reference does not show it); zero leaves it unknown.
	CreditsPerRow float64
	// AllowEmpty accepts a query that matches no record: the plan has no
	// shard, and Run lands an empty dataset. Without it such a query is an
	// *EmptyError (a filter with a typo should not look like success).
	AllowEmpty bool
}

// defaultSizing is the default number of sizing requests in flight.
const defaultSizing = 4

// NewPlan splits the query req of src's resource into shards by the
// partition fields in opts.By, each at or under the row ceiling of one
// delivery, sized with the list endpoint's total (page size 1: nothing is
// charged). It proves coverage before returning: the shards' totals must
// add up to the total of the query they split, at every level; otherwise
// it returns a *CoverageError naming both numbers. A shard still above the
// ceiling after the last field is a *ShardTooBigError naming it. Both
// carry the plan as far as it got (for inspection: Run refuses it). A
// query that matches nothing is an *EmptyError unless opts.AllowEmpty.
//
// The query is checked first: the service's refusal of a filter, period
// or sort is returned as its *lendgraph.APIError (wrapped), before any
// partition field is looked at. Then every partition field is checked with
// the service, even one the plan would not need: a field it refuses is an
// invalid By. A 429 or a 502 on the ceiling probe is waited out (the
// probe started nothing).
//
// req.Format is required and req.Limit must be 0. When req.Fields is set,
// "id" and the partition fields are added to it (DeliveredFields): the
// export checks ids across shards, and every file holds its partition
// values, which are checked as each file lands.
func NewPlan[T any](ctx context.Context, src Source[T], req *lendgraph.DeliveryRequest, opts *PlanOptions) (*Plan, error) {
	var o PlanOptions
	if opts != nil {
		o = *opts
	}
	if src == nil {
		return nil, invalid("src", "is nil; pass the service of the resource to export, e.g. c.Agents")
	}
	if err := checkPlanArgs(req, &o); err != nil {
		return nil, err
	}
	resource := src.Resource()
	if resource == "" {
		return nil, invalid("src", "names no resource (its Resource method returned \"\")")
	}
	base := *req
	base.Fields = DeliveredFields(req.Fields, o.By)
	pl := &planner[T]{src: src, opts: o, sem: make(chan struct{}, cmp.Or(o.Concurrency, defaultSizing))}
	p := &Plan{Version: PlanVersion, Resource: resource, By: slices.Clone(o.By), ByRequested: slices.Clone(o.By), Request: base,
		CreditsPerRow: o.CreditsPerRow, IncludeMissing: o.IncludeMissing, AllowEmpty: o.AllowEmpty, PlannedAt: time.Now().UTC()}

	// The query first (its sort too, which a total does not need): a
	// refused filter is the filter's fault, not a partition field's.
	total, err := pl.total(ctx, &base, true)
	if err != nil {
		return nil, fmt.Errorf("export: the service refused the query (its filters, period or sort): %w", err)
	}
	if err := pl.checkBy(ctx, &base); err != nil {
		return nil, err
	}
	p.Total = total
	if total == 0 && !o.AllowEmpty {
		return nil, &EmptyError{Resource: resource}
	}
	p.MaxRows, p.MaxRowsFrom = o.MaxRows, "user"
	if o.MaxRows <= 0 {
		if total == 0 {
			p.MaxRows, p.MaxRowsFrom = 0, "not needed: the query matches nothing"
		} else {
			c, err := learnCeiling(ctx, src, &base)
			if err != nil {
				return nil, err
			}
			p.MaxRows, p.MaxRowsFrom = c.rows, c.from
			if c.note != "" {
				p.Notes = append(p.Notes, c.note)
			}
		}
	}

	shards := []*draft{{req: base, rows: total}}
	for level, field := range o.By {
		if level > 0 && !anyAbove(shards, p.MaxRows) {
			p.By = p.By[:level]
			break
		}
		next, err := pl.splitAll(ctx, shards, field)
		p.Shards = finish(next, p, level+1)
		if err != nil {
			var ce *CoverageError
			if errors.As(err, &ce) {
				ce.Plan = p
			}
			return nil, err
		}
		shards = next
	}
	p.Shards = finish(shards, p, len(p.By))
	if p.EstimatedRows() != total {
		return nil, &CoverageError{Field: strings.Join(p.By, ","), Total: total, Covered: p.EstimatedRows(), Shards: len(p.Shards), Unattributed: -1, Plan: p}
	}
	var big []*Shard
	for i := range p.Shards {
		if p.MaxRows > 0 && p.Shards[i].Rows > p.MaxRows {
			big = append(big, &p.Shards[i])
		}
	}
	if len(big) > 0 {
		slices.SortFunc(big, func(a, b *Shard) int { return cmp.Compare(b.Rows, a.Rows) })
		return nil, &ShardTooBigError{Shard: big[0].Name, Rows: big[0].Rows, MaxRows: p.MaxRows, By: p.By, Others: len(big) - 1, Plan: p}
	}
	p.Digest = p.digest() // sealed: a plan that proved its coverage
	return p, nil
}

// DeliveredFields are the fields a plan delivers when the request names
// fields: "id" first unless named, then the fields named, then the
// partition fields by not named (so that each file holds the values of
// its partition, which Rows reads from the rows). No fields (nil) stays
// nil: every allowed column is delivered.
func DeliveredFields(fields, by []string) []string {
	if len(fields) == 0 {
		return nil
	}
	out := slices.Clone(fields)
	if !slices.Contains(out, "id") {
		out = append([]string{"id"}, out...)
	}
	for _, f := range by {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func checkPlanArgs(req *lendgraph.DeliveryRequest, o *PlanOptions) error {
	if req == nil {
		return invalid("DeliveryRequest", "is nil; set at least Format")
	}
	if !slices.Contains([]lendgraph.Format{lendgraph.FormatParquet, lendgraph.FormatNDJSON, lendgraph.FormatJSON, lendgraph.FormatCSV}, req.Format) {
		return invalid("Format", "%q is not a delivery format; use parquet (recommended), ndjson, json or csv", req.Format)
	}
	if req.Limit != 0 {
		return invalid("Limit", "is %d; an export delivers every matching row, so leave Limit at 0", req.Limit)
	}
	if req.FlatFilters != nil && req.AdvancedFilters != nil {
		return invalid("DeliveryRequest", "set FlatFilters or AdvancedFilters, not both")
	}
	if req.AdvancedFilters != nil {
		if err := req.AdvancedFilters.Validate(); err != nil {
			return err
		}
	}
	for i, s := range req.Sort {
		if s.Field == "" {
			return invalid(fmt.Sprintf("Sort[%d].Field", i), "must name a field")
		}
	}
	if len(o.By) == 0 {
		return invalid("By", "names no partition field; use e.g. []string{\"state\"} (lendgraph export --by state)")
	}
	for i, f := range o.By {
		if err := checkField(f); err != nil {
			return err
		}
		if slices.Contains(o.By[:i], f) {
			return invalid("By", "partition field %q is named twice", f)
		}
	}
	if o.MaxRows < 0 || o.Concurrency < 0 || o.CreditsPerRow < 0 {
		return invalid("PlanOptions", "MaxRows, Concurrency and CreditsPerRow must not be negative")
	}
	return nil
}

// draft is a shard being planned.
type draft struct {
	keys []Key
	req  lendgraph.DeliveryRequest
	rows int64
}

func anyAbove(ds []*draft, ceiling int64) bool {
	for _, d := range ds {
		if ceiling > 0 && d.rows > ceiling {
			return true
		}
	}
	return false
}

// finish turns drafts into the plan's shards (depth levels deep), in
// directory order.
func finish(ds []*draft, p *Plan, depth int) []Shard {
	out := make([]Shard, 0, len(ds))
	for _, d := range ds {
		var parts []string
		for _, k := range d.keys[:min(depth, len(d.keys))] {
			v := MissingValue
			if !k.Missing {
				v = escapePathValue(valueText(k.Value))
			}
			parts = append(parts, k.Field+"="+v)
		}
		name := strings.Join(parts, "/")
		out = append(out, Shard{Name: name, Keys: d.keys, Rows: d.rows, Request: d.req,
			File: name + "/" + partFile + extension(p.Request.Format)})
	}
	slices.SortFunc(out, func(a, b Shard) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// planner sizes and splits shards.
type planner[T any] struct {
	src  Source[T]
	opts PlanOptions
	sem  chan struct{} // bounds the requests in flight
}

// total is the list total of a delivery request's query: one page of one
// record, which nothing charges.
func (pl *planner[T]) total(ctx context.Context, r *lendgraph.DeliveryRequest, sorted bool) (int64, error) {
	if err := pl.acquire(ctx); err != nil {
		return 0, err
	}
	defer pl.release()
	lr := listOf(r, 1)
	if sorted {
		lr.Sort = r.Sort
	}
	page, err := pl.src.List(ctx, lr)
	if err != nil {
		return 0, err
	}
	return page.Total, nil
}

// acquire takes one of the sizing slots; release gives it back.
func (pl *planner[T]) acquire(ctx context.Context) error {
	select {
	case pl.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (pl *planner[T]) release() { <-pl.sem }

// listOf is the list request of a delivery request's query (no sort: a
// total does not need one).
func listOf(r *lendgraph.DeliveryRequest, size int) *lendgraph.ListRequest {
	return &lendgraph.ListRequest{FlatFilters: r.FlatFilters, AdvancedFilters: r.AdvancedFilters, Period: r.Period,
		Pagination: &lendgraph.Pagination{Size: size}}
}

// splitAll splits every draft by field, in parallel, and proves that each
// one's parts add up to it.
func (pl *planner[T]) splitAll(ctx context.Context, ds []*draft, field string) ([]*draft, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	parts := make([][]*draft, len(ds))
	errs := make([]error, len(ds))
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Go(func() {
			parts[i], errs[i] = pl.split(ctx, d, field)
			if errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	var out []*draft
	var first error
	for i := range ds {
		out = append(out, parts[i]...)
		// The first error that is not merely the cancel another one caused.
		if errs[i] != nil && (first == nil || errors.Is(first, context.Canceled) && !errors.Is(errs[i], context.Canceled)) {
			first = errs[i]
		}
	}
	return out, first
}

// split divides one draft by the values of field and checks that the
// parts cover it exactly.
func (pl *planner[T]) split(ctx context.Context, d *draft, field string) ([]*draft, error) {
	values, unattributed, err := pl.values(ctx, field, &d.req)
	if err != nil {
		return nil, err
	}
	if _, given := pl.opts.Values[field]; len(values) == 0 && d.rows > 0 && !given {
		// The chart names no value for records that exist: the service
		// cannot slice by the field (a list or an object).
		return nil, invalid("By", "the service's chart of %s names no value for the %d records it would split: partition by a field of single values (a string, a number or a boolean), not a list or an object", field, d.rows)
	}
	kids := make([]*draft, len(values))
	for i, v := range values {
		kids[i] = &draft{keys: append(slices.Clone(d.keys), Key{Field: field, Value: v}), req: withValue(d.req, field, v)}
	}
	if pl.opts.IncludeMissing {
		kids = append(kids, &draft{keys: append(slices.Clone(d.keys), Key{Field: field, Missing: true}), req: withoutValues(d.req, field, values)})
	}
	errs := make([]error, len(kids))
	var wg sync.WaitGroup
	for i, k := range kids {
		wg.Go(func() { k.rows, errs[i] = pl.total(ctx, &k.req, false) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("export: sizing the shards by %s: %w", field, err)
	}
	var sum, valued int64 // valued: the shards of values, the missing one left out
	out := kids[:0]
	for i, k := range kids {
		sum += k.rows
		if i < len(values) {
			valued += k.rows
		}
		if k.rows > 0 {
			out = append(out, k)
		}
	}
	if valued == 0 && d.rows > 0 && len(values) > 0 {
		// The chart named values, and filtering by each finds nothing: the
		// service cannot filter by the field's values (a list or an object).
		return nil, invalid("By", "the service's chart of %s names %d values, but a filter by each matches none of the %d records: partition by a field of single values (a string, a number or a boolean), not a list or an object", field, len(values), d.rows)
	}
	if sum != d.rows {
		return out, &CoverageError{Field: field, Scope: draftName(d), Total: d.rows, Covered: sum, Shards: len(out), Unattributed: unattributed}
	}
	return out, nil
}

func draftName(d *draft) string {
	var parts []string
	for _, k := range d.keys {
		v := MissingValue
		if !k.Missing {
			v = escapePathValue(valueText(k.Value))
		}
		parts = append(parts, k.Field+"="+v)
	}
	return strings.Join(parts, "/")
}

// withValue narrows a request to field = v: a flat filter when the query
// uses flat filters (replacing a filter on the same field, whose values the
// listing already respected), an AND with the advanced filter otherwise.
func withValue(r lendgraph.DeliveryRequest, field string, v any) lendgraph.DeliveryRequest {
	if r.AdvancedFilters != nil {
		r.AdvancedFilters = lendgraph.And(r.AdvancedFilters, lendgraph.Eq(field, v))
		return r
	}
	ff := maps.Clone(r.FlatFilters)
	if ff == nil {
		ff = map[string]any{}
	}
	ff[field] = v
	r.FlatFilters = ff
	return r
}

// withoutValues narrows a request to the records whose field is none of
// values (those without the field included). Flat filters have no "not",
// so the query becomes an advanced filter: each flat filter an equality
// (a list: any of its values).
func withoutValues(r lendgraph.DeliveryRequest, field string, values []any) lendgraph.DeliveryRequest {
	conds := []*lendgraph.Filter{}
	if r.AdvancedFilters != nil {
		conds = append(conds, r.AdvancedFilters)
	}
	for _, k := range slices.Sorted(maps.Keys(r.FlatFilters)) {
		switch v := r.FlatFilters[k].(type) {
		case []any:
			conds = append(conds, lendgraph.In(k, v...))
		default:
			conds = append(conds, lendgraph.Eq(k, v))
		}
	}
	if len(values) > 0 {
		conds = append(conds, lendgraph.Not(lendgraph.In(field, values...)))
	}
	r.FlatFilters = nil
	switch len(conds) {
	case 0:
		r.AdvancedFilters = nil
	case 1:
		r.AdvancedFilters = conds[0]
	default:
		r.AdvancedFilters = lendgraph.And(conds...)
	}
	return r
}
