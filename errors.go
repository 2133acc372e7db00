package lendgraph

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// Sentinel errors for errors.Is. Every *APIError matches the sentinel of its
// status; the job errors come from Wait.
var (
	// ErrUnauthorized matches a 401: the API key is missing, wrong or revoked.
	ErrUnauthorized = errors.New("lendgraph: unauthorized")
	// ErrForbidden matches a 403: the key may not do this (for jobs: the job
	// belongs to another caller; for deliveries: see *EntitlementError).
	ErrForbidden = errors.New("lendgraph: forbidden")
	// ErrNotFound matches a 404: unknown id, or a job past its 30-day retention.
	ErrNotFound = errors.New("lendgraph: not found")
	// ErrRateLimited matches a 429 that outlasted the retries (see *RateLimitError).
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
	// ErrMissingAPIKey is returned by any call that needs the API key when
	// none was configured (WithAPIKey or $LENDGRAPH_API_KEY).
	ErrMissingAPIKey = errors.New("lendgraph: no API key: pass lendgraph.WithAPIKey or set LENDGRAPH_API_KEY")
	// ErrPartialMismatch is returned by DownloadFile when PATH.part holds
	// part of another file (another job, or another size, ETag or
	// Last-Modified than the storage host now sends). Nothing was written
	// to it; remove PATH.part to download from the start.
	ErrPartialMismatch = errors.New("lendgraph: the partial download belongs to another file")
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
}

// Error implements the error interface.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lendgraph: %s %s: %d", e.Method, e.Path, e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		b.WriteString(" " + t)
	}
	if e.Message != "" && e.Message != http.StatusText(e.StatusCode) {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Code != "" && e.Code != e.Message {
		fmt.Fprintf(&b, " (code %s)", e.Code)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	return b.String()
}

// Is matches the sentinel of the status code.
func (e *APIError) Is(target error) bool {
	switch target {
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
	return fmt.Sprintf("%s: balance %s credits, cost %s credits: top up before retrying",
		e.APIError.Error(), fmtNum(e.Balance), fmtNum(e.Cost))
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *InsufficientCreditsError) Unwrap() error { return e.APIError }

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
	return fmt.Sprintf("%s: %d rows need entitlement %q (limit without it: %d); narrow the filters or set Limit",
		e.APIError.Error(), e.EstimatedTotal, e.EntitlementKey, e.MaxRows)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *EntitlementError) Unwrap() error { return e.APIError }

// MaxRowsError is a 400 delivery_exceeds_max_rows: the estimate is above the
// row ceiling of one delivery. No job was started.
type MaxRowsError struct {
	*APIError
	EstimatedTotal int64
	MaxRows        int64
}

// Error implements the error interface.
func (e *MaxRowsError) Error() string {
	return fmt.Sprintf("%s: estimated %d rows, ceiling %d; narrow the filters or set Limit <= %d",
		e.APIError.Error(), e.EstimatedTotal, e.MaxRows, e.MaxRows)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *MaxRowsError) Unwrap() error { return e.APIError }

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
	s := e.APIError.Error()
	for _, is := range e.Issues {
		if p := is.PathString(); p != "" {
			s += fmt.Sprintf("; %s: %s", p, is.Message)
		} else {
			s += "; " + is.Message
		}
	}
	return s
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *ValidationError) Unwrap() error { return e.APIError }

// LimitError carries the {error, limit, size} body: a request over a size limit.
type LimitError struct {
	*APIError
	Limit int64
	Size  int64
}

// Error implements the error interface.
func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: size %d over limit %d", e.APIError.Error(), e.Size, e.Limit)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *LimitError) Unwrap() error { return e.APIError }

// RateLimitError is a 429 that outlasted the retries, or whose Retry-After
// was longer than the client waits on its own.
type RateLimitError struct {
	*APIError
	// RetryAfter is the server's Retry-After, zero when absent or unreadable.
	RetryAfter time.Duration
}

// Error implements the error interface.
func (e *RateLimitError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("%s: retry after %s", e.APIError.Error(), e.RetryAfter)
	}
	return e.APIError.Error()
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *RateLimitError) Unwrap() error { return e.APIError }

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
	var eb errorBody
	if err := json.Unmarshal(body, &eb); err == nil {
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
	return fmt.Sprintf("lendgraph: invalid %s: %s", e.Arg, e.Problem)
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
	s := fmt.Sprintf("lendgraph: %s job %s %s", e.Kind, e.JobID, e.Status)
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Is matches ErrJobFailed or ErrJobCancelled.
func (e *JobError) Is(target error) bool {
	return (target == ErrJobFailed && e.Status == "failed") ||
		(target == ErrJobCancelled && e.Status == "cancelled")
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
	s := fmt.Sprintf("lendgraph: %s %s: decoding %d response", e.Method, e.Path, e.StatusCode)
	if e.ContentType != "" {
		s += " (" + e.ContentType + ")"
	}
	s += ": " + e.Err.Error()
	if e.RequestID != "" {
		s += " [request " + e.RequestID + "]"
	}
	return s
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *DecodeError) Unwrap() error { return e.Err }

// TransportError is a request that got no HTTP response: connection refused
// or reset, a timeout, a refused redirect. URLs in it carry no query string.
type TransportError struct {
	Method, Path string
	Err          error
}

// Error implements the error interface.
func (e *TransportError) Error() string {
	return fmt.Sprintf("lendgraph: %s %s: %v", e.Method, e.Path, e.Err)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *TransportError) Unwrap() error { return e.Err }
