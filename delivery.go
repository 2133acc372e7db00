package lendgraph

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// Format is a bulk delivery file format.
type Format string

// Delivery formats.
const (
	// FormatNDJSON is gzipped newline-delimited JSON (.ndjson.gz).
	FormatNDJSON Format = "ndjson"
	// FormatJSON is one JSON array (.json).
	FormatJSON Format = "json"
	// FormatCSV is RFC 4180 CSV with a header of camelCase field names (.csv).
	FormatCSV Format = "csv"
	// FormatParquet is Apache Parquet with typed columns (.parquet).
	FormatParquet Format = "parquet"
)

// DeliveryStatus is the status record of a bulk delivery job.
type DeliveryStatus struct {
	JobID          string   `json:"jobId"`
	EntityType     string   `json:"entityType"`
	Format         Format   `json:"format"`
	Status         JobState `json:"status"`
	EstimatedTotal int64    `json:"estimatedTotal"`
	Processed      int64    `json:"processed"`
	Bytes          int64    `json:"bytes"`
	// ChargedCount is the billed rows; present once completed.
	ChargedCount *int64 `json:"chargedCount,omitempty"`
	// CreditsCharged is absent until completion, and absent if the billing
	// call did not land.
	CreditsCharged *float64 `json:"creditsCharged,omitempty"`
	// CreditLedgerID is the ledger entry of the debit; absent if billing did not land.
	CreditLedgerID string    `json:"creditLedgerId,omitempty"`
	StartedAt      time.Time `json:"startedAt,omitzero"`
	CompletedAt    time.Time `json:"completedAt,omitzero"`
	// ResultsURL is the signed download link, present once completed and
	// re-signed on every fetch.
	ResultsURL SignedURL `json:"resultsUrl,omitempty"`
	// Error is present only when Status is failed.
	Error string `json:"error,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// DeliveryJob is a handle on a bulk delivery job whose rows are T.
type DeliveryJob[T any] struct {
	job
	double JobBackend[DeliveryStatus] // nil: the API
	// ID is the job's id.
	ID string
	// State, EntityType, Format, EstimatedTotal and MaxRows are the submit
	// response (HTTP 202); a job re-attached by id leaves them zero (the
	// Status method fetches them).
	State          JobState
	EntityType     string
	Format         Format
	EstimatedTotal int64
	// MaxRows is the row ceiling of one delivery for this organization.
	MaxRows int64
}

// DelivererAPI is the bulk delivery part of a resource service, for code
// generic over resources (the export package takes one); each service's
// own interface (AgentsAPI, ...) lists all of its methods.
type DelivererAPI[T any] interface {
	Deliver(ctx context.Context, req *DeliveryRequest, opts ...Option) (*DeliveryJob[T], error)
	DeliveryJob(id string) *DeliveryJob[T]
	// Resource is the path segment of the resource ("agents"). It sends
	// nothing.
	Resource() string
}

// DeliveryRequest asks for every row matching a list query in one file.
// There is no pagination: the whole matching set is delivered.
type DeliveryRequest struct {
	// FlatFilters, AdvancedFilters, Period and Sort are the list filters,
	// as in ListRequest. Sort decides which rows a Limit keeps.
	FlatFilters     map[string]any `json:"flatFilters,omitempty"`
	AdvancedFilters *Filter        `json:"advancedFilters,omitempty"`
	Period          Period         `json:"period,omitempty"`
	Sort            []Sort         `json:"sort,omitempty"`
	// Format is required: FormatNDJSON, FormatJSON, FormatCSV or FormatParquet.
	Format Format `json:"format"`
	// Fields narrows the columns (camelCase response field names). The
	// server intersects them with the entitlement's allowed columns and the
	// schema; when nothing is left it delivers every allowed column.
	Fields []string `json:"fields,omitempty"`
	// Limit caps the rows delivered and billed (the first Limit rows in sort
	// order); 0 means no cap. It must not exceed the row ceiling (1,000
	// without the entitlement, the entitlement's maxRows with it).
	Limit int64 `json:"limit,omitempty"`
}

func (r *DeliveryRequest) validate() error {
	if r == nil {
		return invalidArg("DeliveryRequest", "is nil; set at least Format")
	}
	lr := ListRequest{FlatFilters: r.FlatFilters, AdvancedFilters: r.AdvancedFilters, Period: r.Period, Sort: r.Sort}
	if err := lr.validate(); err != nil {
		return err
	}
	if r.Format == "" {
		return invalidArg("Format", "is required: set FormatNDJSON, FormatJSON, FormatCSV or FormatParquet")
	}
	if !slices.Contains(deliveryFormats, r.Format) {
		return invalidArg("Format", "%q is not a delivery format; use ndjson, json, csv or parquet", r.Format)
	}
	for i, f := range r.Fields {
		if strings.TrimSpace(f) == "" {
			return invalidArg(fmt.Sprintf("Fields[%d]", i), "is empty; name a camelCase response field such as \"fullName\"")
		}
	}
	if r.Limit < 0 {
		return invalidArg("Limit", "is %d; use 0 for no cap or a positive row count", r.Limit)
	}
	return nil
}

var deliveryFormats = []Format{FormatNDJSON, FormatJSON, FormatCSV, FormatParquet}

type deliveryHandle struct {
	JobID          string   `json:"jobId"`
	Status         JobState `json:"status"`
	EntityType     string   `json:"entityType"`
	Format         Format   `json:"format"`
	EstimatedTotal int64    `json:"estimatedTotal"`
	MaxRows        int64    `json:"maxRows"`
}

func (r resource[T]) deliver(ctx context.Context, req *DeliveryRequest, opts []Option) (*DeliveryJob[T], error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	h, err := call[deliveryHandle](ctx, r.c, r.op("Deliver"), opts, request{method: http.MethodPost, path: "/v1/" + r.path + "/bulk-delivery", body: req, kind: retry.Launch})
	if err != nil {
		return nil, err
	}
	if h.JobID == "" {
		return nil, fmt.Errorf("lendgraph: bulk delivery of %s: the server answered without a jobId", r.path)
	}
	j := r.deliveryJob(h.JobID)
	j.State, j.EntityType, j.Format, j.EstimatedTotal, j.MaxRows = h.Status, h.EntityType, h.Format, h.EstimatedTotal, h.MaxRows
	return j, nil
}

func (r resource[T]) deliveryJob(id string) *DeliveryJob[T] {
	return &DeliveryJob[T]{ID: id, job: job{client: r.c, kind: "delivery",
		path: "/v1/" + r.path + "/bulk-delivery/" + url.PathEscape(id), id: id}}
}

// Status fetches the job's status record.
func (j *DeliveryJob[T]) Status(ctx context.Context, opts ...Option) (*DeliveryStatus, error) {
	if err := j.ready(); err != nil {
		return nil, err
	}
	return jobCall(ctx, j.job, j.double, "DeliveryJob.Status", opts,
		func(ctx context.Context, o *operation, st *DeliveryStatus) error { return j.status(ctx, o, st) }, func(ctx context.Context, id string) (*DeliveryStatus, error) { return j.double.Status(ctx, id) })
}

// Wait polls the job until it is completed, failed or cancelled, and
// returns the last status record fetched with any error, exactly as
// EnrichJob.Wait does: a non-nil status can come with a non-nil error
// (a failed or cancelled job, or ctx ending after a first poll).
func (j *DeliveryJob[T]) Wait(ctx context.Context, opts ...DeliveryWaitOption) (*DeliveryStatus, error) {
	if err := j.ready(); err != nil {
		return nil, err
	}
	plain, progress := splitOptions[DeliveryStatus](opts)
	return wait(ctx, j.job, j.double, "DeliveryJob.Wait", plain, progress, deliveryState)
}

func deliveryState(s *DeliveryStatus) (JobState, string) { return s.Status, s.Error }

// Cancel cancels a queued or running job and returns its settled status.
func (j *DeliveryJob[T]) Cancel(ctx context.Context, opts ...Option) (*DeliveryStatus, error) {
	if err := j.ready(); err != nil {
		return nil, err
	}
	return jobCall(ctx, j.job, j.double, "DeliveryJob.Cancel", opts,
		func(ctx context.Context, o *operation, st *DeliveryStatus) error { return j.cancel(ctx, o, st) }, func(ctx context.Context, id string) (*DeliveryStatus, error) { return j.double.Cancel(ctx, id) })
}

// begin starts the operation name of a method that waits for the job and
// reads its file, with the call's options. A test double's handle has no
// client: its operation only carries the settings.
func (j *DeliveryJob[T]) begin(ctx context.Context, name string, opts []Option) (context.Context, *operation, error) {
	if err := j.ready(); err != nil {
		return ctx, nil, err
	}
	if j.double != nil {
		cfg, err := waitSettings(nil, name, opts)
		if err != nil {
			return ctx, nil, err
		}
		return ctx, &operation{name: name, cfg: cfg}, checkCtx(ctx)
	}
	return j.client.begin(ctx, name, opts)
}

// completed waits for the job to finish (one status fetch when it already
// has), as an operation DeliveryJob.Wait inside o, and returns its status;
// a failed or cancelled job is an error.
func (j *DeliveryJob[T]) completed(ctx context.Context, o *operation) (*DeliveryStatus, error) {
	var st *DeliveryStatus
	var err error
	if j.double != nil {
		st, err = waitFor(ctx, nil, o.cfg, j.kind, j.id, nil, func(ctx context.Context) (*DeliveryStatus, error) { return j.double.Status(ctx, j.ID) }, deliveryState)
	} else {
		wctx, w := o.child(ctx, "DeliveryJob.Wait")
		st, err = waitIn(wctx, w, j.job, nil, deliveryState)
		w.end(err)
	}
	if err != nil {
		return nil, err
	}
	if st.ResultsURL == "" && j.double == nil {
		return nil, fmt.Errorf("lendgraph: delivery job %s completed without a resultsUrl", j.ID)
	}
	return st, nil
}

// freshLink returns the function a download of operation o fetches a
// freshly signed link with: the status again, since the reference
// re-signs resultsUrl on every fetch. A job that is no longer completed (a
// server saying running after completed) is an error, not a link to
// follow.
func (j *DeliveryJob[T]) freshLink(o *operation) linkFunc {
	return func(ctx context.Context) (SignedURL, error) {
		var st DeliveryStatus
		if err := j.status(ctx, o, &st); err != nil {
			return "", err
		}
		if st.Status != JobCompleted {
			return "", fmt.Errorf("lendgraph: delivery job %s was completed and is now %s", j.ID, st.Status)
		}
		return st.ResultsURL, nil
	}
}

// Download writes the delivered file to w exactly as stored (an ndjson
// delivery stays gzipped) and returns the bytes written. A job still queued
// or running is waited for first. The signed link's host never receives
// the API key or any Authorization header. When the connection drops or the
// link expires, Download fetches the status again for a freshly signed link
// and resumes with a Range request from the bytes already written
// (restarting cleanly when the host ignores Range); the final length is
// checked against the size the host announced, and every response must
// carry the same ETag (or Last-Modified) as the first. A file of 16 MiB or
// more comes down in ranges of up to 4 MiB over several connections at
// once (see WithDownloadConnections), written to w in order from a window
// of one range a connection in memory (32 MiB with the defaults). To write to a file that a later call
// can continue after a crash, use DownloadFile.
func (j *DeliveryJob[T]) Download(ctx context.Context, w io.Writer, opts ...DownloadOption) (_ int64, err error) {
	plain, progress := splitOptions[DownloadProgress](opts)
	ctx, o, err := j.begin(ctx, "DeliveryJob.Download", plain)
	if err != nil {
		return 0, err
	}
	defer func() { o.end(err) }()
	st, err := j.completed(ctx, o)
	if err != nil {
		return 0, err
	}
	if j.double != nil {
		return copyDouble(ctx, func(ctx context.Context) (io.ReadCloser, error) { return j.double.Open(ctx, j.ID) }, w)
	}
	return o.downloadSized(ctx, st.ResultsURL, j.freshLink(o), w, expectedSize(st), progress)
}

// DownloadFile downloads the delivered file to path and returns its size;
// a job still queued or running is waited for first. The bytes go to
// path+".part", renamed to path once complete; a large file comes down
// over several connections, each range written in place (see
// WithDownloadConnections). The download is resumable across restarts: it
// records its progress in path+".part.meta" (the job, the file's size and
// the ETag or Last-Modified the storage host sent, the byte ranges on
// disk; the part file is fsynced first), and when it fails, is cancelled
// or the process dies, the next DownloadFile of the same job to the same
// path continues from the bytes on disk. A part file of another job, or
// of a file the host now describes differently (size, ETag,
// Last-Modified), is refused with an error matching ErrPartialMismatch
// and left as it is; remove it to download from the start. A part file of
// this user's without a readable record is overwritten. No name is written
// through a symbolic link or into a file that is not this user's: such a
// file is left as it is, with an error matching ErrUnsafeFile; a new part
// file is 0600 until it becomes the output. Before the file grows, its
// declared size is checked against WithMaxDownloadBytes and the space
// free where it goes (*DownloadSpaceError). One download at a time may
// write to a path.
func (j *DeliveryJob[T]) DownloadFile(ctx context.Context, path string, opts ...DownloadOption) (_ int64, err error) {
	plain, progress := splitOptions[DownloadProgress](opts)
	if j.ready() == nil && j.double != nil {
		return 0, invalidArg("DeliveryJob", "is a test double's handle: DownloadFile writes a file from a signed link; use Download")
	}
	ctx, o, err := j.begin(ctx, "DeliveryJob.DownloadFile", plain)
	if err != nil {
		return 0, err
	}
	defer func() { o.end(err) }()
	p, err := openPartial(path, j.ID)
	if err != nil {
		return 0, err
	}
	st, err := j.completed(ctx, o)
	if err != nil {
		return 0, err
	}
	return o.downloadFile(ctx, p, st.ResultsURL, j.freshLink(o), expectedSize(st), progress)
}

// Rows yields the delivered rows as T while the file downloads: ndjson,
// json and csv are decoded straight from the network (nothing touches the
// disk). Parquet needs random access and a parquet library, which lives in
// its own package so that programs that never read parquet do not link
// it: for a parquet job Rows yields an *InvalidArgumentError naming
// parquet.Rows (github.com/lendgraph/lendgraph-go/parquet), which streams
// it through a temporary file. A job still queued or running is waited
// for first. Breaking out of the loop or cancelling ctx stops the
// download; no goroutine is left behind. Errors end the sequence.
//
// The sequence follows the package's iterator contract: every range
// downloads the file again and yields it from its first row; ranges in
// several goroutines are independent; break or a panic in the loop body
// closes the download at once (even one stalled mid-body) and returns
// with no goroutine, connection or temporary file left; cancelling ctx
// ends the sequence with an error matching ctx's error and cause, the same
// in every format.
func (j *DeliveryJob[T]) Rows(ctx context.Context, opts ...Option) iter.Seq2[T, error] {
	if err := checkCtx(ctx); err != nil {
		return errSeq[T](err)
	}
	return func(yield func(T, error) bool) {
		var zero T
		ctx, o, err := j.begin(ctx, "DeliveryJob.Rows", opts)
		if err != nil {
			yield(zero, err)
			return
		}
		cfg := o.cfg
		var rows int64
		var failed error
		defer func() {
			o.watch().update(func(s *Summary) { s.Rows = rows })
			o.end(failed)
		}()
		next := yield
		yield = func(v T, err error) bool {
			if err != nil {
				failed = err
			} else {
				rows++
			}
			return next(v, err)
		}
		// fail yields err, or the context's error once ctx has ended (a
		// failed read caused by the cancellation says less).
		fail := func(err error) bool {
			if cerr := ctxErr(ctx); cerr != nil {
				err = fmt.Errorf("lendgraph: reading delivery %s: %w", j.ID, cerr)
			}
			return yield(zero, err)
		}
		if j.Format == FormatParquet {
			yield(zero, errParquet("Format", "parquet.Rows(ctx, job)"))
			return
		}
		st, err := j.completed(ctx, o)
		if err != nil {
			fail(err)
			return
		}
		if st.Format == FormatParquet {
			yield(zero, errParquet("Format", "parquet.Rows(ctx, job)"))
			return
		}
		if !slices.Contains(deliveryFormats, st.Format) {
			yield(zero, fmt.Errorf("lendgraph: delivery job %s has format %q, which this SDK cannot decode; use Download", j.ID, st.Format))
			return
		}
		if err := o.overCap(expectedSize(st)); err != nil {
			yield(zero, err)
			return
		}
		rc, err := j.open(ctx, o, st)
		if err != nil {
			yield(zero, err)
			return
		}
		defer rc.Close()
		done := ctx.Done()
		for row, err := range decodeRows[T](rc, st.Format, cfg) {
			select {
			case <-done:
				err = ctxErr(ctx)
			default:
			}
			if err != nil {
				// Close the download first: the decoder's reader must not
				// wait for the network before the loop can return.
				_ = rc.Close()
				fail(err)
				return
			}
			// Breaking (or panicking) closes the download before the
			// decoder waits for its reader.
			if !yieldClosing(yield, rc, row, nil) {
				return
			}
		}
	}
}

// open streams the result file of the completed job st, in operation o.
func (j *DeliveryJob[T]) open(ctx context.Context, o *operation, st *DeliveryStatus) (io.ReadCloser, error) {
	if j.double != nil {
		return j.double.Open(ctx, j.ID)
	}
	return o.openDownload(ctx, st.ResultsURL, j.freshLink(o), expectedSize(st)), nil
}

// NewDeliveryJob returns a handle on delivery job id served by b instead
// of the API: a test double (lendgraphtest.NewDeliveryJob builds scripted
// ones). Every method of the handle works through b.
func NewDeliveryJob[T any](id string, b JobBackend[DeliveryStatus]) *DeliveryJob[T] {
	return &DeliveryJob[T]{ID: id, job: job{kind: "delivery", id: id}, double: b}
}

// ready checks that the handle can reach its job.
func (j *DeliveryJob[T]) ready() error {
	if j == nil {
		return invalidArg("DeliveryJob", "is nil")
	}
	if j.double != nil {
		return nil
	}
	return j.usable("delivery", j.ID, "c.<Resource>.DeliveryJob(id)")
}

// copyDouble writes the result file of a test double's job to w.
func copyDouble(ctx context.Context, open func(context.Context) (io.ReadCloser, error), w io.Writer) (int64, error) {
	rc, err := open(ctx)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	return io.Copy(w, rc)
}

// DeliveryJobAs returns a handle on the same job whose rows decode as U:
// for a row type of your own that declares every column you deliver (the
// SDK's record types keep the others in Extra).
func DeliveryJobAs[U, T any](j *DeliveryJob[T]) *DeliveryJob[U] {
	return &DeliveryJob[U]{job: j.job, double: j.double, ID: j.ID, State: j.State, EntityType: j.EntityType,
		Format: j.Format, EstimatedTotal: j.EstimatedTotal, MaxRows: j.MaxRows}
}

// expectedSize is the file size a completed status record announces, -1
// when it does not.
func expectedSize(st *DeliveryStatus) int64 {
	if st.Bytes > 0 {
		return st.Bytes
	}
	return -1
}
