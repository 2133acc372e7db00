package lendgraph

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lendgraph/lendgraph-go/internal/formats"
	"github.com/lendgraph/lendgraph-go/internal/retry"
	"github.com/lendgraph/lendgraph-go/internal/safefile"
)

// Sentinel errors for errors.Is. Every *APIError matches the sentinel of its
// status; the job errors come from Wait.
var (
	// ErrBadRequest matches a 400: the service refused the request as
	// invalid (an unknown field, a value of the wrong type, a malformed or
	// foreign cursor, a limit above the row ceiling); the message says
	// what. *MaxRowsError matches it too. The SDK refuses what it can check
	// itself before sending, with an *InvalidArgumentError.
	ErrBadRequest = errors.New("lendgraph: bad request")
	// ErrUnauthorized matches a 401: the API key is missing, wrong or revoked.
	ErrUnauthorized = errors.New("lendgraph: unauthorized")
	// ErrForbidden matches a 403: the key may not do this (for jobs: the job
	// belongs to another caller; for deliveries: see *EntitlementError).
	ErrForbidden = errors.New("lendgraph: forbidden")
	// ErrNotFound matches a 404: unknown id, or a job past its 30-day retention.
	ErrNotFound = errors.New("lendgraph: not found")
	// ErrRateLimited matches every *RateLimitError: a 429 that outlasted the
	// retries, or a server-requested wait longer than the client waits
	// (WithMaxServerWait).
	ErrRateLimited = errors.New("lendgraph: rate limited")
	// ErrInsufficientCredits matches a 402 (see *InsufficientCreditsError).
	ErrInsufficientCredits = errors.New("lendgraph: insufficient credits")
	// ErrJobFinished matches a 409 from cancelling a job that already
	// completed, failed or was cancelled; nothing changed on the server.
	ErrJobFinished = errors.New("lendgraph: job already finished")
	// ErrJobFailed is returned by Wait when the job ended in status failed.
	ErrJobFailed = errors.New("lendgraph: job failed")
	// ErrJobCancelled is returned by Wait when the job ended in status cancelled.
	ErrJobCancelled = errors.New("lendgraph: job cancelled")
	// ErrUnavailable matches a 503: the backend (for instance instant
	// search) is not configured or temporarily unavailable.
	ErrUnavailable = errors.New("lendgraph: service unavailable")
	// ErrOutcomeUnknown matches the error of a call that charges or acts
	// (an enrichment with Refresh, a bulk enrichment or delivery submit, an
	// external CRM push, a state-changing CRM or saved-filter call, Do with
	// POST or PATCH) when its request may have reached the server: a 5xx,
	// a connection cut after sending, a response cut or unreadable, an
	// attempt timeout, a context that ended in flight. The server may have
	// acted (charged, started a job, written records) although the call
	// failed, so the SDK did not repeat it. Find out before repeating it:
	// list the enrichments (Enrichments) or look for the job you would
	// submit again; read the CRM push status. The error keeps its own type
	// (errors.As: *APIError, *TransportError, *DecodeError) and the
	// context's error. Errors that do not match it mean nothing happened.
	ErrOutcomeUnknown = errors.New("lendgraph: outcome unknown: the server may have acted")
	// ErrMissingAPIKey matches the *MissingAPIKeyError of any call that
	// needs the API key when none was configured (WithAPIKey or
	// $LENDGRAPH_API_KEY).
	ErrMissingAPIKey = errors.New("lendgraph: no API key: pass lendgraph.WithAPIKey or set LENDGRAPH_API_KEY")
	// ErrUnsafeLink matches the error for an address the SDK refused to
	// follow (a results or download link, the search host a search token
	// names, a redirect): it is not an absolute http or https URL, or it is
	// plain http while the API is https (see WithInsecureHTTPLinks), or it
	// carries the API key. Nothing is sent to it, and nothing is retried.
	ErrUnsafeLink = errors.New("lendgraph: unsafe link")

	// ErrPartialMismatch is returned by DownloadFile when PATH.part holds
	// part of another file (another job, or another size, ETag or
	// Last-Modified than the storage host now sends). Nothing was written
	// to it; remove PATH.part to download from the start.
	ErrPartialMismatch = errors.New("lendgraph: the partial download belongs to another file")

	// ErrRetryBudgetExhausted matches the error of a call that failed
	// without the retry it was due because the client's retry budget was
	// spent (see WithRetryBudget): the API has been failing for many calls
	// at once. The error keeps its own type and chain.
	ErrRetryBudgetExhausted = errors.New("lendgraph: retry budget exhausted")
	// ErrClientClosed matches the error of a call made after Client.Close.
	// Nothing was sent.
	ErrClientClosed = errors.New("lendgraph: client closed")
	// ErrUnsafeFile matches the error of DownloadFile when a name it would
	// write (the part file, its record) is a symbolic link, or a file that
	// is not a regular file of this user: it is left as it is and nothing
	// is written through it.
	ErrUnsafeFile = safefile.ErrUnsafe
)

// maxErrorBody caps how much of an error response is read and kept.
const maxErrorBody = 64 << 10

// APIError is returned for every non-2xx response. Bodies with more shape are
// wrapped by a more specific type (InsufficientCreditsError, EntitlementError,
// MaxRowsError, ValidationError, RateLimitError) that unwraps to it.
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Method and Path name the request (the path carries no query string).
	Method, Path string
	// Message is the body's "error" field (or the status text when absent).
	Message string
	// Code is the body's "code" field, when present.
	Code string
	// RequestID is the X-Request-Id header of the response, when present.
	RequestID string
	// Body is the raw response body, capped at 64 KiB.
	Body []byte
	// Truncated reports that the body was longer than the cap.
	Truncated bool

	retryAfter time.Duration // the answer's Retry-After, 0 when none
}

// Error implements the error interface. A nil or hand-built APIError prints
// what it has.
func (e *APIError) Error() string {
	if e == nil {
		return "lendgraph: API error"
	}
	return e.text(0)
}

// text is the message of e, or of an error with status fallback when e is
// nil or has no status (a wrapper built by hand).
func (e *APIError) text(fallback int) string {
	var b strings.Builder
	b.WriteString("lendgraph:")
	var status int
	if e != nil {
		if req := strings.TrimSpace(e.Method + " " + truncate(e.Path, maxQuoted)); req != "" {
			b.WriteString(" " + req + ":")
		}
		status = e.StatusCode
	}
	if status == 0 {
		status = fallback
	}
	if status != 0 {
		fmt.Fprintf(&b, " %d", status)
		if t := http.StatusText(status); t != "" {
			b.WriteString(" " + t)
		}
	} else {
		b.WriteString(" API error")
	}
	if e == nil {
		return b.String()
	}
	if e.Message != "" && e.Message != http.StatusText(status) {
		fmt.Fprintf(&b, ": %s", truncate(e.Message, maxProblem))
	}
	if e.Code != "" && e.Code != e.Message {
		fmt.Fprintf(&b, " (code %s)", e.Code)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	return b.String()
}

// orStatus returns e, or an APIError of the given status when e is nil: the
// wrapped error of a typed error built by hand, so errors.Is still matches
// its sentinel.
func orStatus(e *APIError, status int) *APIError {
	if e == nil {
		return &APIError{StatusCode: status}
	}
	return e
}

// Is matches the sentinel of the status code.
func (e *APIError) Is(target error) bool {
	if e == nil {
		return false
	}
	switch target {
	case ErrBadRequest:
		return e.StatusCode == http.StatusBadRequest
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized
	case ErrForbidden:
		return e.StatusCode == http.StatusForbidden
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests
	case ErrInsufficientCredits:
		return e.StatusCode == http.StatusPaymentRequired
	case ErrJobFinished:
		return e.StatusCode == http.StatusConflict
	case ErrUnavailable:
		return e.StatusCode == http.StatusServiceUnavailable
	}
	return false
}

// InsufficientCreditsError is a 402: the balance does not cover the cost
// (for bulk jobs, the worst case). Show Balance against Cost and ask the user
// to top up before retrying.
type InsufficientCreditsError struct {
	*APIError
	Balance float64
	Cost    float64
}

// Error implements the error interface.
func (e *InsufficientCreditsError) Error() string {
	if e == nil {
		return (*APIError)(nil).text(http.StatusPaymentRequired)
	}
	return fmt.Sprintf("%s: balance %s credits, cost %s credits: top up before retrying",
		e.APIError.text(http.StatusPaymentRequired), fmtNum(e.Balance), fmtNum(e.Cost))
}

// Is matches the sentinel of the status code, like APIError.Is.
func (e *InsufficientCreditsError) Is(target error) bool {
	return e != nil && orStatus(e.APIError, http.StatusPaymentRequired).Is(target)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *InsufficientCreditsError) Unwrap() error {
	if e == nil {
		return nil
	}
	return orStatus(e.APIError, http.StatusPaymentRequired)
}

// EntitlementError is a 403 entitlement_missing from a bulk delivery submit:
// the delivery would exceed 1,000 rows and the organization lacks the
// entitlement EntitlementKey (bulk-delivery.<resource>).
type EntitlementError struct {
	*APIError
	EntitlementKey string
	EstimatedTotal int64
	MaxRows        int64
}

// Error implements the error interface.
func (e *EntitlementError) Error() string {
	if e == nil {
		return (*APIError)(nil).text(http.StatusForbidden)
	}
	s := e.APIError.text(http.StatusForbidden)
	if e.EntitlementKey == "" && e.EstimatedTotal == 0 {
		return s
	}
	return fmt.Sprintf("%s: %d rows need entitlement %q (limit without it: %d); narrow the filters or set Limit",
		s, e.EstimatedTotal, e.EntitlementKey, e.MaxRows)
}

// Is matches the sentinel of the status code, like APIError.Is.
func (e *EntitlementError) Is(target error) bool {
	return e != nil && orStatus(e.APIError, http.StatusForbidden).Is(target)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *EntitlementError) Unwrap() error {
	if e == nil {
		return nil
	}
	return orStatus(e.APIError, http.StatusForbidden)
}

// MaxRowsError is a 400 delivery_exceeds_max_rows: the estimate is above the
// row ceiling of one delivery. No job was started.
type MaxRowsError struct {
	*APIError
	EstimatedTotal int64
	MaxRows        int64
}

// Error implements the error interface.
func (e *MaxRowsError) Error() string {
	if e == nil {
		return (*APIError)(nil).text(http.StatusBadRequest)
	}
	s := e.APIError.text(http.StatusBadRequest)
	if e.MaxRows <= 0 {
		return s + ": the delivery is above the row ceiling; narrow the filters or set Limit"
	}
	return fmt.Sprintf("%s: estimated %d rows, ceiling %d; narrow the filters or set Limit <= %d",
		s, e.EstimatedTotal, e.MaxRows, e.MaxRows)
}

// Is matches the sentinel of the status code, like APIError.Is.
func (e *MaxRowsError) Is(target error) bool {
	return e != nil && orStatus(e.APIError, http.StatusBadRequest).Is(target)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *MaxRowsError) Unwrap() error {
	if e == nil {
		return nil
	}
	return orStatus(e.APIError, http.StatusBadRequest)
}

// Issue is one problem reported by a validation error.
type Issue struct {
	Message string `json:"message"`
	Path    any    `json:"path"`
}

// PathString renders Path, which servers send as a string or an array of
// keys and indexes, as a dotted path.
func (i Issue) PathString() string {
	switch p := i.Path.(type) {
	case string:
		return p
	case []any:
		parts := make([]string, len(p))
		for k, v := range p {
			parts[k] = fmt.Sprint(v)
		}
		return strings.Join(parts, ".")
	case nil:
		return ""
	}
	return fmt.Sprint(i.Path)
}

// ValidationError carries a body with code and issues (saved filters), or
// code and details (external CRM push).
type ValidationError struct {
	*APIError
	Issues  []Issue
	Details map[string]any
}

// Error implements the error interface.
func (e *ValidationError) Error() string {
	if e == nil {
		return (*APIError)(nil).text(http.StatusBadRequest)
	}
	s := e.APIError.text(http.StatusBadRequest)
	for _, is := range e.Issues {
		if p := is.PathString(); p != "" {
			s += fmt.Sprintf("; %s: %s", p, is.Message)
		} else {
			s += "; " + is.Message
		}
	}
	return s
}

// Is matches the sentinel of the status code, like APIError.Is.
func (e *ValidationError) Is(target error) bool {
	return e != nil && orStatus(e.APIError, http.StatusBadRequest).Is(target)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *ValidationError) Unwrap() error {
	if e == nil {
		return nil
	}
	return orStatus(e.APIError, http.StatusBadRequest)
}

// LimitError carries the {error, limit, size} body: a request over a size limit.
type LimitError struct {
	*APIError
	Limit int64
	Size  int64
}

// Error implements the error interface.
func (e *LimitError) Error() string {
	if e == nil {
		return (*APIError)(nil).text(http.StatusRequestEntityTooLarge)
	}
	return fmt.Sprintf("%s: size %d over limit %d", e.APIError.text(http.StatusRequestEntityTooLarge), e.Size, e.Limit)
}

// Is matches the sentinel of the status code, like APIError.Is.
func (e *LimitError) Is(target error) bool {
	return e != nil && orStatus(e.APIError, http.StatusRequestEntityTooLarge).Is(target)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *LimitError) Unwrap() error {
	if e == nil {
		return nil
	}
	return orStatus(e.APIError, http.StatusRequestEntityTooLarge)
}

// RateLimitError is a 429 that outlasted the retries, or an answer asking
// the client to wait longer than it waits on its own (WithMaxServerWait,
// default one minute): a Retry-After on any status, a job poll's 429, or a
// 202 computing whose retryAfterMs is above the cap. In the second case
// the call returned at once, without sleeping; StatusCode says which
// answer it was. It matches ErrRateLimited.
type RateLimitError struct {
	*APIError
	// RetryAfter is the wait the server asked for, zero when absent or
	// unreadable.
	RetryAfter time.Duration
	// limit is the client's cap when RetryAfter was above it.
	limit time.Duration
}

// Error implements the error interface.
func (e *RateLimitError) Error() string {
	if e == nil {
		return (*APIError)(nil).text(http.StatusTooManyRequests)
	}
	s := e.APIError.text(http.StatusTooManyRequests)
	switch {
	case e.limit > 0:
		s += fmt.Sprintf(": the server asks to retry after %s, longer than this client waits (%s, WithMaxServerWait)", e.RetryAfter, e.limit)
	case e.RetryAfter > 0:
		s += fmt.Sprintf(": retry after %s", e.RetryAfter)
	}
	return s
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *RateLimitError) Unwrap() error {
	if e == nil {
		return nil
	}
	return orStatus(e.APIError, http.StatusTooManyRequests)
}

// Is matches ErrRateLimited, whatever the status.
func (e *RateLimitError) Is(target error) bool { return e != nil && target == ErrRateLimited }

// errorBody is the union of the error body shapes in the reference.
type errorBody struct {
	Error          string         `json:"error"`
	Message        string         `json:"message"`
	Code           string         `json:"code"`
	Balance        *float64       `json:"balance"`
	Cost           *float64       `json:"cost"`
	EntitlementKey string         `json:"entitlementKey"`
	EstimatedTotal *int64         `json:"estimatedTotal"`
	MaxRows        *int64         `json:"maxRows"`
	Limit          *int64         `json:"limit"`
	Size           *int64         `json:"size"`
	Issues         []Issue        `json:"issues"`
	Details        map[string]any `json:"details"`
}

// parseError builds the typed error for a non-2xx response from its status,
// headers and (capped) body. It never fails: a body that is not JSON (an
// HTML error page from a proxy) still gives an *APIError with the raw body.
func parseError(method, path string, status int, h http.Header, body []byte, truncated bool, now time.Time) error {
	base := &APIError{
		StatusCode: status,
		Method:     method,
		Path:       path,
		RequestID:  h.Get("X-Request-Id"),
		Body:       body,
		Truncated:  truncated,
	}
	if d, ok := retry.RetryAfter(h, now); ok {
		base.retryAfter = d
	}
	var eb errorBody
	if err := unmarshal(body, &eb); err == nil {
		base.Message = eb.Error
		if base.Message == "" {
			base.Message = eb.Message
		}
		base.Code = eb.Code
	} else {
		base.Message = http.StatusText(status)
	}
	switch {
	case status == http.StatusTooManyRequests:
		e := &RateLimitError{APIError: base}
		if d, ok := retry.RetryAfter(h, now); ok {
			e.RetryAfter = d
		}
		return e
	case status == http.StatusPaymentRequired:
		e := &InsufficientCreditsError{APIError: base}
		if eb.Balance != nil {
			e.Balance = *eb.Balance
		}
		if eb.Cost != nil {
			e.Cost = *eb.Cost
		}
		return e
	case eb.Error == "entitlement_missing" || eb.Code == "entitlement_missing":
		return &EntitlementError{APIError: base, EntitlementKey: eb.EntitlementKey,
			EstimatedTotal: deref(eb.EstimatedTotal), MaxRows: deref(eb.MaxRows)}
	case eb.Error == "delivery_exceeds_max_rows" || eb.Code == "delivery_exceeds_max_rows":
		return &MaxRowsError{APIError: base, EstimatedTotal: deref(eb.EstimatedTotal), MaxRows: deref(eb.MaxRows)}
	case eb.Issues != nil || eb.Details != nil:
		return &ValidationError{APIError: base, Issues: eb.Issues, Details: eb.Details}
	case eb.Limit != nil && eb.Size != nil:
		return &LimitError{APIError: base, Limit: *eb.Limit, Size: *eb.Size}
	}
	return base
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func fmtNum(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%g", f)
}

// InvalidArgumentError is returned, before any request is sent, when an
// argument breaks a rule of the reference. It says what to change.
type InvalidArgumentError struct {
	// Arg names the argument or field, e.g. "Pagination.Size".
	Arg string
	// Problem says what is wrong and what to change.
	Problem string
}

// Error implements the error interface.
func (e *InvalidArgumentError) Error() string {
	arg, problem := "argument", "breaks a rule of the reference"
	if e != nil && e.Arg != "" {
		arg = e.Arg
	}
	if e != nil && e.Problem != "" {
		problem = truncate(e.Problem, maxProblem)
	}
	return "lendgraph: invalid " + truncate(arg, maxQuoted) + ": " + problem
}

func invalidArg(arg, format string, a ...any) error {
	return &InvalidArgumentError{Arg: arg, Problem: fmt.Sprintf(format, a...)}
}

// JobError is returned by Wait when a job ends failed or cancelled. It
// matches ErrJobFailed or ErrJobCancelled with errors.Is.
type JobError struct {
	// Kind is "enrichment" or "delivery".
	Kind string
	// JobID is the job's id.
	JobID string
	// Status is the terminal status: failed or cancelled.
	Status string
	// Message is the job's error field (failed jobs).
	Message string
}

// Error implements the error interface.
func (e *JobError) Error() string {
	if e == nil {
		return "lendgraph: job error"
	}
	var b strings.Builder
	b.WriteString("lendgraph:")
	if e.Kind != "" {
		b.WriteString(" " + e.Kind)
	}
	b.WriteString(" job")
	if e.JobID != "" {
		b.WriteString(" " + e.JobID)
	}
	if e.Status != "" {
		b.WriteString(" " + e.Status)
	} else {
		b.WriteString(" ended")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// Is matches ErrJobFailed or ErrJobCancelled.
func (e *JobError) Is(target error) bool {
	return e != nil && ((target == ErrJobFailed && e.Status == "failed") ||
		(target == ErrJobCancelled && e.Status == "cancelled"))
}

// DecodeError is a 2xx response whose body could not be decoded: truncated
// JSON, an HTML page from a proxy, a wrong content type.
type DecodeError struct {
	Method, Path string
	StatusCode   int
	ContentType  string
	RequestID    string
	Err          error
}

// Error implements the error interface.
func (e *DecodeError) Error() string {
	if e == nil {
		return "lendgraph: decoding a response failed"
	}
	var b strings.Builder
	b.WriteString("lendgraph:")
	if req := strings.TrimSpace(e.Method + " " + truncate(e.Path, maxQuoted)); req != "" {
		b.WriteString(" " + req + ":")
	}
	b.WriteString(" decoding")
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " %d", e.StatusCode)
	}
	b.WriteString(" response")
	if e.ContentType != "" {
		b.WriteString(" (" + e.ContentType + ")")
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	if e.RequestID != "" {
		b.WriteString(" [request " + e.RequestID + "]")
	}
	return b.String()
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *DecodeError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// cut reports whether the body ended early or the connection was reset
// while it was read, as opposed to a body that arrived whole but did not
// decode.
func (e *DecodeError) cut() bool { return retry.Interrupted(e.Err) }

// RowError is a file that could not be decoded, and where: a row that is
// not valid JSON or does not fit T, a truncated or corrupt file, a csv
// cell that is not a number, a read that failed mid-file. DecodeRows,
// DeliveryJob.Rows, DecodeEnrichmentResults, EnrichJob.ResultRows and the
// parquet package's Decode and Rows end with one (errors.As reaches it);
// the rows before it were yielded and stay read.
type RowError struct {
	// Format is the file's format: "ndjson", "json", "csv", "parquet" or
	// "enrichment results".
	Format string
	// Row is the 1-based number of the row that failed; 0 when the file
	// failed before its first row (an empty file, a bad header or footer).
	Row int64
	// Line is the 1-based line of the file (ndjson, csv) where reading
	// failed: a malformed csv record, an overlong line, a cut file. A row
	// that reads but does not fit T is named by Row (and Column for csv),
	// with Line 0.
	Line int64
	// Offset is the byte offset where the problem was found (in the
	// decompressed stream for ndjson.gz), 0 when not known.
	Offset int64
	// Column names the column (csv, parquet), "" when not known.
	Column string
	// Err is what went wrong: a JSON error, io.ErrUnexpectedEOF, a
	// network error, ...
	Err error
}

// Error words the place and the cause, e.g.
// `lendgraph: csv file: row 12 (line 13, column "zip"): "x" is not a valid number`.
func (e *RowError) Error() string { return (*formats.RowError)(e).Error() }

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *RowError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// TransportError is a request that got no HTTP response: connection refused
// or reset, a timeout, a refused redirect. A URL in its message shows its
// query string as ?REDACTED (a signed link's signature never appears), and
// the message repeats at most a bounded part of the path.
type TransportError struct {
	Method, Path string
	Err          error
}

// Error implements the error interface.
func (e *TransportError) Error() string {
	if e == nil {
		return "lendgraph: transport error"
	}
	s := "lendgraph:"
	if req := strings.TrimSpace(e.Method + " " + truncate(e.Path, maxQuoted)); req != "" {
		s += " " + req + ":"
	}
	if e.Err == nil {
		return s + " no response"
	}
	return s + " " + truncate(e.Err.Error(), maxProblem)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *TransportError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// DownloadError is a download from a signed link that could not finish.
// Its message never holds the link's signature.
type DownloadError struct {
	// Written is how many bytes reached the writer (or the file) before
	// the failure.
	Written int64
	// Size is the object's size, when the server said; -1 otherwise.
	Size int64
	Err  error
}

// Error implements the error interface.
func (e *DownloadError) Error() string {
	if e == nil {
		return "lendgraph: download failed"
	}
	size := "unknown size"
	if e.Size > 0 || (e.Size == 0 && e.Written == 0 && e.Err == nil) {
		size = strconv.FormatInt(e.Size, 10) + " bytes"
	}
	s := fmt.Sprintf("lendgraph: download stopped after %d bytes of %s", e.Written, size)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *DownloadError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// DownloadSpaceError is a download refused for its size: larger than the
// cap WithMaxDownloadBytes set (DownloadFile, Download, Rows), or than the
// space free on the file system DownloadFile writes to. A size declared up
// front is refused before anything is fetched; a file of unknown size
// fails when its bytes reach the bound (then inside a *DownloadError).
type DownloadSpaceError struct {
	// Path is the file that was to be written; empty for a download to a
	// writer (Download, Rows).
	Path string
	// Size is the file's declared size in bytes; -1 when unknown.
	Size int64
	// MaxBytes is the cap that refused it; 0 when the free space did.
	MaxBytes int64
	// Free is the bytes free on the file system holding Path; -1 when the
	// system cannot tell.
	Free int64
}

// Error implements the error interface.
func (e *DownloadSpaceError) Error() string {
	if e == nil {
		return "lendgraph: no room for the download"
	}
	size := "a file of unknown size"
	if e.Size >= 0 {
		size = "a file of " + strconv.FormatInt(e.Size, 10) + " bytes"
	}
	if e.MaxBytes > 0 {
		if e.Path == "" { // Download or Rows, to a writer
			return fmt.Sprintf("lendgraph: download: %s is over the cap of %d bytes (WithMaxDownloadBytes)", size, e.MaxBytes)
		}
		return fmt.Sprintf("lendgraph: %s: %s is over the cap of %d bytes (WithMaxDownloadBytes)", e.Path, size, e.MaxBytes)
	}
	return fmt.Sprintf("lendgraph: %s: %s does not fit in the %d bytes free on its file system", e.Path, size, e.Free)
}

// PushIncompleteError is returned by PushCRMBatched when a batch failed. Done
// holds the merged outcome of the batches the server answered; Unknown the
// ids of the batch whose outcome is unknown (the server may have written
// them: check the CRM before pushing them again); NotSent the ids never
// sent. Err is the failure (errors.As reaches *InsufficientCreditsError on
// a 402).
type PushIncompleteError struct {
	Done    *PushCRMResult
	Unknown []string
	NotSent []string
	Err     error
}

// Error implements the error interface.
func (e *PushIncompleteError) Error() string {
	if e == nil {
		return "lendgraph: CRM push stopped"
	}
	answered := 0
	if e.Done != nil {
		answered = len(e.Done.Results)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "lendgraph: CRM push stopped: %d ids answered", answered)
	if len(e.Unknown) > 0 {
		fmt.Fprintf(&b, ", %d ids with unknown outcome (may have been written; not re-sent)", len(e.Unknown))
	}
	fmt.Fprintf(&b, ", %d ids not sent", len(e.NotSent))
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *PushIncompleteError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// SearchHostError is a non-2xx answer of the search host, with the members
// of its error body ({message, code, type, link}, Meilisearch's shape). It
// matches the sentinel of its status with errors.Is (ErrUnauthorized for
// 401, ErrForbidden for 403, ErrUnavailable for 503, ...) and unwraps to the
// *APIError that holds the status, the message, the code and the raw body.
type SearchHostError struct {
	*APIError
	// Index is the index the request named ("" for a route that names
	// none, such as a multi-search through SearchHost.Transport).
	Index SearchIndex
	// Type and Link are the "type" and "link" members of the host's error
	// body (Message and Code are on the APIError).
	Type, Link string
}

// Error implements the error interface.
func (e *SearchHostError) Error() string {
	if e == nil || e.APIError == nil || e.StatusCode == 0 {
		s := "lendgraph: search host error"
		if e != nil && e.Index != "" {
			s += fmt.Sprintf(" on index %q", e.Index)
		}
		return s
	}
	s := fmt.Sprintf("lendgraph: search host %s %s: %d %s", e.Method, e.Path, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Code != "" {
		s += " (code " + e.Code + ")"
	}
	return s
}

// Unwrap returns the *APIError, for errors.As.
func (e *SearchHostError) Unwrap() error {
	if e == nil || e.APIError == nil {
		return nil
	}
	return e.APIError
}

// outcomeUnknownError marks the error of a call that charges or acts whose
// request may have been acted on (see ErrOutcomeUnknown).
type outcomeUnknownError struct{ err error }

// Error implements the error interface.
func (e *outcomeUnknownError) Error() string {
	return e.err.Error() + " (outcome unknown: the server may have acted; check before repeating the call)"
}

// Unwrap returns the error and ErrOutcomeUnknown, for errors.Is and errors.As.
func (e *outcomeUnknownError) Unwrap() []error { return []error{e.err, ErrOutcomeUnknown} }

// maxQuoted bounds what an error message repeats of one value the caller
// sent (an id in a path, a header name), and maxProblem the whole of an
// InvalidArgumentError's problem: an id of 100,000 bytes must not make an
// error of 100,000 bytes in a log line.
const (
	maxQuoted  = 256
	maxProblem = 1024
)

// truncate returns s cut to about n bytes (on a rune boundary), saying how
// long it was.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// MissingAPIKeyError is the error of a call that needs the API key when
// none was configured (WithAPIKey or $LENDGRAPH_API_KEY). Nothing was
// sent. It matches ErrMissingAPIKey.
type MissingAPIKeyError struct {
	// Operation names the call, such as "Agents.List" (see OperationFrom).
	Operation string
}

// Error implements the error interface.
func (e *MissingAPIKeyError) Error() string {
	if e == nil || e.Operation == "" {
		return ErrMissingAPIKey.Error()
	}
	return "lendgraph: " + e.Operation + ": no API key: pass lendgraph.WithAPIKey or set LENDGRAPH_API_KEY"
}

// Is matches ErrMissingAPIKey.
func (e *MissingAPIKeyError) Is(target error) bool { return target == ErrMissingAPIKey }

// ClientRateLimitError is an attempt the client's own rate limit
// (WithRateLimit) refused: the next request slot comes after the call's
// context deadline, so nothing was sent, and the SDK did not wait for a
// deadline it could not meet. The caller's context was still live when it
// was returned, so it does not match context.DeadlineExceeded (a call
// whose context ended while it waited for a slot returns the context's
// error). Raise the rate, lengthen the deadline or send fewer calls at once.
type ClientRateLimitError struct {
	// Method and Path name the request that was not sent.
	Method, Path string
	// Deadline is the call's context deadline.
	Deadline time.Time
}

// Error implements the error interface.
func (e *ClientRateLimitError) Error() string {
	s := "lendgraph:"
	if e != nil {
		if req := strings.TrimSpace(e.Method + " " + truncate(e.Path, maxQuoted)); req != "" {
			s += " " + req + ":"
		}
	}
	return s + " not sent: the client rate limit (WithRateLimit) has no request slot before the context's deadline"
}

// NewOutcomeUnknownError returns err marked as the failure of a call that
// charges or acts whose request may have reached the server: it matches
// ErrOutcomeUnknown and keeps err's chain (errors.As still finds an
// *APIError or a *TransportError in it), as the SDK's own such errors do.
// It is for test doubles that stand in for the SDK. A nil err stands for
// the commonest such failure: a *TransportError saying the connection was
// reset after the request was sent.
func NewOutcomeUnknownError(err error) error {
	if err == nil {
		err = &TransportError{Err: errors.New("connection reset after the request was sent")}
	}
	return &outcomeUnknownError{err: err}
}

// NewAPIError returns the error the SDK returns for a non-2xx answer with
// this status and body ({"error": ..., "code": ...} as the API sends it),
// for method and path: an *APIError, or the more specific type the status
// and body make (*InsufficientCreditsError for a 402 with balance and
// cost, *RateLimitError for a 429, *ValidationError, *EntitlementError,
// *MaxRowsError, *LimitError), matching the same sentinels. header may be
// nil; it is read for Retry-After and X-Request-Id. It is for test doubles
// that stand in for the SDK.
func NewAPIError(method, path string, status int, header http.Header, body []byte) error {
	if header == nil {
		header = http.Header{}
	}
	b, truncated := body, false
	if len(b) > maxErrorBody {
		b, truncated = b[:maxErrorBody], true
	}
	return parseError(method, path, status, header, b, truncated, time.Now())
}
