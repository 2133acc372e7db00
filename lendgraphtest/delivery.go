package lendgraphtest

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"

	"github.com/lendgraph/lendgraph-go/internal/pqwrite"
)

// Bulk delivery in the fake: POST/GET/DELETE /v1/<resource>/bulk-delivery[/{jobId}]
// for the six resources that offer it, with the reference's rules:
// entitlements and row ceilings, 402 against the estimate, fields ∩ allowed
// columns ∩ schema, limit in sort order, the real file written page by page
// in the chosen format, billing once at completion, cancel at the next page
// boundary, and the file served by the signed storage host.

// deliveryResources are the resources that offer bulk delivery.
var deliveryResources = []string{"agents", "originators", "companies", "loans", "properties", "branches"}

const (
	// freeDeliveryRows is the row ceiling without the entitlement.
	freeDeliveryRows = 1000
	// deliveryPage is the rows a delivery job writes between progress ticks
	// (and cancellation checks).
	deliveryPage = 1000
	// parquetRowGroup is the rows of a parquet row group, which the writer
	// holds in memory.
	parquetRowGroup = 20_000
)

// deliveryState is the area's in-memory store (see areaState).
type deliveryState struct {
	deliveryMu  sync.Mutex
	dir         string   // temp dir of delivery files, removed at Close
	failNext    []string // messages of injected failures, next job first
	skipBilling int      // jobs whose billing "does not land"
}

func (st *deliveryState) init() {}

// close removes the delivery files.
func (st *deliveryState) close() {
	st.deliveryMu.Lock()
	defer st.deliveryMu.Unlock()
	if st.dir != "" {
		_ = os.RemoveAll(st.dir)
		st.dir = ""
	}
}

func (st *deliveryState) tempFile(pattern string) (*os.File, error) {
	st.deliveryMu.Lock()
	defer st.deliveryMu.Unlock()
	if st.dir == "" {
		d, err := os.MkdirTemp("", "lendgraphtest-delivery-*")
		if err != nil {
			return nil, err
		}
		st.dir = d
	}
	return os.CreateTemp(st.dir, pattern)
}

// FailNextDelivery makes the next delivery job fail with msg after its
// first page: it ends failed, with msg in its error field and no charge.
func (s *Server) FailNextDelivery(msg string) {
	s.area.deliveryMu.Lock()
	s.area.failNext = append(s.area.failNext, msg)
	s.area.deliveryMu.Unlock()
}

// DropNextDeliveryBilling makes the billing call of the next delivery job
// "not land": it completes with chargedCount but without creditsCharged and
// creditLedgerId, and nothing is debited.
func (s *Server) DropNextDeliveryBilling() {
	s.area.deliveryMu.Lock()
	s.area.skipBilling++
	s.area.deliveryMu.Unlock()
}

func (s *Server) routeDelivery(mux *http.ServeMux) {
	for _, res := range deliveryResources {
		base := "/v1/" + res + "/bulk-delivery"
		mux.HandleFunc("POST "+base, s.authed(s.handleDeliverySubmit))
		mux.HandleFunc("GET "+base+"/{jobId}", s.authed(s.handleDeliveryStatus))
		mux.HandleFunc("DELETE "+base+"/{jobId}", s.authed(s.handleDeliveryCancel))
	}
}

// deliveryResource is the resource of a bulk-delivery path
// (/v1/<resource>/bulk-delivery...).
func deliveryResource(r *http.Request) string {
	rest, _ := strings.CutPrefix(r.URL.Path, "/v1/")
	res, _, _ := strings.Cut(rest, "/")
	return res
}

type deliveryRequest struct {
	listQuery
	Format string   `json:"format"`
	Fields []string `json:"fields"`
	Limit  *float64 `json:"limit"`
}

var deliveryMedia = map[string]struct{ ext, contentType string }{
	"ndjson":  {".ndjson.gz", "application/x-ndjson"},
	"json":    {".json", "application/json"},
	"csv":     {".csv", "text/csv"},
	"parquet": {".parquet", "application/vnd.apache.parquet"},
}

// deliveryPlan is what a submission settled: the rows and columns to write.
type deliveryPlan struct {
	resource string
	format   string
	sel      selection
	rows     int // rows to deliver: the selection capped by limit
	columns  []string
	failMsg  string
	noBill   bool
}

func (s *Server) handleDeliverySubmit(w http.ResponseWriter, r *http.Request, c Caller) {
	res := deliveryResource(r)
	var req deliveryRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.Pagination != nil {
		writeError(w, http.StatusBadRequest, "pagination is not accepted: a delivery writes the whole matching set", nil)
		return
	}
	media, ok := deliveryMedia[req.Format]
	if !ok {
		writeError(w, http.StatusBadRequest, "format is required: one of ndjson, json, csv, parquet", nil)
		return
	}
	s.mu.Lock()
	ent, entitled := s.entitlementLocked(c.OrgID, res)
	balance := s.orgLocked(c.OrgID).credits
	s.mu.Unlock()
	ceiling := int64(freeDeliveryRows)
	var extra map[string]any
	if entitled {
		ceiling, extra = ent.MaxRows, ent.Filters
	}
	limit := int64(0)
	if req.Limit != nil {
		l := *req.Limit
		if l < 0 || l != math.Trunc(l) {
			writeError(w, http.StatusBadRequest, "limit must be a non-negative integer", nil)
			return
		}
		if int64(l) > ceiling {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit %d exceeds the row ceiling %d", int64(l), ceiling),
				map[string]any{"limit": int64(l), "maxRows": ceiling})
			return
		}
		limit = int64(l)
	}
	sel, err := s.selectRecords(res, req.listQuery, extra)
	if err == nil {
		err = s.data.checkFields("fields", res, req.Fields)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), nil)
		return
	}
	estimated := int64(sel.Len())
	if limit > 0 {
		estimated = min(estimated, limit)
	}
	key := "bulk-delivery." + res
	if !entitled && estimated > freeDeliveryRows {
		writeError(w, http.StatusForbidden, "entitlement_missing", map[string]any{
			"entitlementKey": key, "estimatedTotal": estimated, "maxRows": int64(freeDeliveryRows)})
		return
	}
	if estimated > ceiling {
		writeError(w, http.StatusBadRequest, "delivery_exceeds_max_rows", map[string]any{
			"estimatedTotal": estimated, "maxRows": ceiling})
		return
	}
	if cost := float64(estimated); balance < cost {
		writeError(w, http.StatusPaymentRequired, "insufficient credits", map[string]any{"balance": balance, "cost": cost})
		return
	}
	plan := &deliveryPlan{resource: res, format: req.Format, sel: sel, rows: int(estimated),
		columns: s.deliveryColumns(res, req.Fields, ent.Columns)}
	s.area.deliveryMu.Lock()
	if len(s.area.failNext) > 0 {
		plan.failMsg, s.area.failNext = s.area.failNext[0], s.area.failNext[1:]
	}
	if s.area.skipBilling > 0 {
		plan.noBill = true
		s.area.skipBilling--
	}
	s.area.deliveryMu.Unlock()

	var file string // written by run, read by complete (under s.mu)
	spec := jobSpec{kind: "delivery", resource: res, total: estimated}
	spec.run = func(ctx context.Context, jc *jobCtx) error {
		path, err := s.writeDelivery(ctx, jc, plan)
		if err != nil {
			return err
		}
		if s.cfg.s3 != nil {
			if err := s.cfg.s3.upload(ctx, jc.Job().id+media.ext, path, media.contentType); err != nil {
				return fmt.Errorf("storage: %w", err)
			}
		}
		s.mu.Lock()
		file = path
		s.mu.Unlock()
		return nil
	}
	spec.complete = func(j *fakeJob) {
		key := j.id + media.ext
		s.putFileLocked(key, j.id+media.ext, media.contentType, file, s.cfg.s3 != nil)
		j.objectKey = key
		st := &deliveryBilling{charged: int64(plan.rows)}
		if !plan.noBill && plan.rows > 0 {
			d := s.debitLocked(j.owner, "delivery", float64(plan.rows))
			st.credits, st.ledgerID = &d.Amount, d.ID
		} else if !plan.noBill {
			zero := 0.0
			st.credits = &zero
		}
		j.state2 = st
	}
	spec.render = func(j *fakeJob, rec map[string]any) {
		rec["entityType"] = res
		rec["format"] = req.Format
		rec["estimatedTotal"] = estimated
		rec["processed"] = j.processed
		rec["bytes"] = j.counters["bytes"]
		if b, ok := j.state2.(*deliveryBilling); ok && j.state == stateCompleted {
			rec["chargedCount"] = b.charged
			if b.credits != nil {
				rec["creditsCharged"] = *b.credits
			}
			if b.ledgerID != "" {
				rec["creditLedgerId"] = b.ledgerID
			}
		}
	}
	j := s.startJob(c, spec, "dlv")
	writeJSON(w, http.StatusAccepted, map[string]any{"jobId": j.id, "status": stateQueued, "entityType": res,
		"format": req.Format, "estimatedTotal": estimated, "maxRows": ceiling})
}

type deliveryBilling struct {
	charged  int64
	credits  *float64
	ledgerID string
}

func (s *Server) handleDeliveryStatus(w http.ResponseWriter, r *http.Request, c Caller) {
	if id, ok := s.deliveryJobID(w, r); ok {
		s.serveJobStatus(w, id, "delivery", c)
	}
}

func (s *Server) handleDeliveryCancel(w http.ResponseWriter, r *http.Request, c Caller) {
	if id, ok := s.deliveryJobID(w, r); ok {
		s.serveJobCancel(w, id, "delivery", c)
	}
}

// deliveryJobID answers 404 for a job of another resource.
func (s *Server) deliveryJobID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("jobId")
	s.mu.Lock()
	j, ok := s.jobs[id]
	wrong := ok && j.spec.resource != deliveryResource(r)
	s.mu.Unlock()
	if wrong {
		writeError(w, http.StatusNotFound, "job not found", nil)
		return "", false
	}
	return id, true
}

// deliveryColumns is fields ∩ allowed ∩ schema (in the order asked), or
// every allowed column of the schema when that is empty. (Fields outside
// the schema were refused before: see checkFields.)
func (s *Server) deliveryColumns(res string, fields, allowed []string) []string {
	schema := s.data.Fields(res)
	ok := func(f string) bool {
		return slices.Contains(schema, f) && (len(allowed) == 0 || slices.Contains(allowed, f))
	}
	var cols []string
	for _, f := range fields {
		if ok(f) && !slices.Contains(cols, f) {
			cols = append(cols, f)
		}
	}
	if len(cols) > 0 {
		return cols
	}
	for _, f := range schema {
		if ok(f) {
			cols = append(cols, f)
		}
	}
	return cols
}

// countingWriter counts the bytes reaching the file.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// rowWriter writes delivery rows in one format.
type rowWriter interface {
	write(rows []Record) error
	close() error
}

// writeDelivery writes the plan's rows to a temp file page by page,
// reporting progress and bytes, and returns the file's path. A cancelled
// or failed job leaves no file.
func (s *Server) writeDelivery(ctx context.Context, jc *jobCtx, p *deliveryPlan) (path string, err error) {
	f, err := s.area.tempFile("delivery-*" + deliveryMedia[p.format].ext)
	if err != nil {
		return "", err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 256<<10)
	cw := &countingWriter{w: bw}
	rw, err := s.newRowWriter(p, cw)
	if err != nil {
		return "", err
	}
	page := make([]Record, 0, deliveryPage)
	var reported int64
	for start := 0; start < p.rows || start == 0; start += deliveryPage {
		page = page[:0]
		for k := start; k < min(start+deliveryPage, p.rows); k++ {
			full := s.data.Summary(p.resource, p.sel.At(k))
			row := make(Record, len(p.columns))
			for _, c := range p.columns {
				if v, ok := full[c]; ok {
					row[c] = v
				}
			}
			page = append(page, row)
		}
		if err := rw.write(page); err != nil {
			return "", err
		}
		if err := bw.Flush(); err != nil {
			return "", err
		}
		if p.failMsg != "" {
			return "", errors.New(p.failMsg)
		}
		if err := jc.Progress(ctx, int64(len(page)), map[string]int64{"bytes": cw.n - reported}); err != nil {
			return "", err
		}
		reported = cw.n
		if p.rows == 0 {
			break
		}
	}
	if err := rw.close(); err != nil {
		return "", err
	}
	if err := bw.Flush(); err != nil {
		return "", err
	}
	if err := jc.Progress(ctx, 0, map[string]int64{"bytes": cw.n - reported}); err != nil {
		return "", err
	}
	return f.Name(), nil
}

func (s *Server) newRowWriter(p *deliveryPlan, w io.Writer) (rowWriter, error) {
	if p.format == "parquet" {
		return s.newParquetWriter(p, w)
	}
	return newRowWriter(p.format, p.columns, nil, w)
}

// newRowWriter writes rows with the given columns in one of the delivery
// formats; sample types parquet's columns.
func newRowWriter(format string, columns []string, sample Record, w io.Writer) (rowWriter, error) {
	switch format {
	case "ndjson":
		zw := gzip.NewWriter(w)
		return &ndjsonWriter{zw: zw}, nil
	case "json":
		return &jsonArrayWriter{w: w}, nil
	case "csv":
		cw := csv.NewWriter(w)
		if err := cw.Write(columns); err != nil {
			return nil, err
		}
		return &csvWriter{w: cw, cols: columns}, nil
	case "parquet":
		return newParquetWriter("rows", columns, sample, w)
	}
	return nil, fmt.Errorf("unknown format %q", format)
}

type ndjsonWriter struct{ zw *gzip.Writer }

func (n *ndjsonWriter) write(rows []Record) error {
	enc := json.NewEncoder(n.zw)
	enc.SetEscapeHTML(false)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return n.zw.Flush()
}

func (n *ndjsonWriter) close() error { return n.zw.Close() }

type jsonArrayWriter struct {
	w    io.Writer
	rows int
}

func (j *jsonArrayWriter) write(rows []Record) error {
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		sep := ",\n"
		if j.rows == 0 {
			sep = "[\n"
		}
		j.rows++
		if _, err := io.WriteString(j.w, sep); err != nil {
			return err
		}
		if _, err := j.w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func (j *jsonArrayWriter) close() error {
	end := "\n]\n"
	if j.rows == 0 {
		end = "[]\n"
	}
	_, err := io.WriteString(j.w, end)
	return err
}

type csvWriter struct {
	w    *csv.Writer
	cols []string
	rec  []string
}

// csvCell is a value as a csv cell: strings as they are, everything else
// (numbers, booleans, nested values) as its JSON.
func csvCell(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

func (c *csvWriter) write(rows []Record) error {
	for _, r := range rows {
		c.rec = c.rec[:0]
		for _, col := range c.cols {
			cell, err := csvCell(r[col])
			if err != nil {
				return err
			}
			c.rec = append(c.rec, cell)
		}
		if err := c.w.Write(c.rec); err != nil {
			return err
		}
	}
	c.w.Flush()
	return c.w.Error()
}

func (c *csvWriter) close() error { c.w.Flush(); return c.w.Error() }

// parquetWriter writes typed columns: strings, int64, double, boolean, and
// nested values as JSON-annotated strings, every column optional, in row
// groups of parquetRowGroup rows, snappy-compressed (internal/pqwrite).
type parquetWriter struct {
	w    *pqwrite.Writer
	cols []pqwrite.Column // in the file's column order: sorted by name
	row  []any
}

func (s *Server) newParquetWriter(p *deliveryPlan, w io.Writer) (*parquetWriter, error) {
	return newParquetWriter(p.resource, p.columns, s.data.samples(p.resource), w)
}

// newParquetWriter writes columns typed after the values of sample.
func newParquetWriter(name string, columns []string, sample Record, w io.Writer) (*parquetWriter, error) {
	cols := make([]pqwrite.Column, 0, len(columns))
	for _, c := range slices.Sorted(slices.Values(columns)) {
		kind := pqwrite.JSON
		switch sample[c].(type) {
		case string:
			kind = pqwrite.String
		case int64, int:
			kind = pqwrite.Int64
		case float64:
			kind = pqwrite.Double
		case bool:
			kind = pqwrite.Boolean
		}
		cols = append(cols, pqwrite.Column{Name: c, Kind: kind})
	}
	pw, err := pqwrite.NewWriter(w, name, cols, pqwrite.Options{RowGroupRows: parquetRowGroup, Codec: pqwrite.Snappy})
	if err != nil {
		return nil, err
	}
	return &parquetWriter{w: pw, cols: cols, row: make([]any, len(cols))}, nil
}

func (p *parquetWriter) write(rows []Record) error {
	for _, r := range rows {
		for i, c := range p.cols {
			v, ok := r[c.Name]
			if !ok || v == nil {
				p.row[i] = nil
				continue
			}
			switch c.Kind {
			case pqwrite.String:
				s, _ := v.(string)
				p.row[i] = s
			case pqwrite.Int64:
				n, _ := v.(int64)
				p.row[i] = n
			case pqwrite.Double:
				f, _ := toFloat(v)
				p.row[i] = f
			case pqwrite.Boolean:
				b, _ := v.(bool)
				p.row[i] = b
			default:
				b, err := json.Marshal(v)
				if err != nil {
					return err
				}
				p.row[i] = b
			}
		}
		if err := p.w.Write(p.row); err != nil {
			return err
		}
	}
	return nil
}

func (p *parquetWriter) close() error { return p.w.Close() }
