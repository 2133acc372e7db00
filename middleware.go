package lendgraph

import (
	"context"
	"net/http"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// Middleware runs around each attempt the SDK sends to the API host: it may
// read or change req (add a header, start a span, read
// OperationFrom(req.Context())), call next to send it, and read or replace
// what comes back, as openai-go's option.WithMiddleware does. It runs once
// per attempt: a retried call passes through it again, and so does each
// redirect within the API host.
//
// It sits above the SDK's own layers: the request it sees carries no API
// key (added below it), and its response's headers are already redacted.
// Requests to other hosts (signed storage links, the search host, a
// redirect elsewhere) do not pass through it, so a middleware never sees a
// link signature or a search token. A middleware must return next's
// response or close its body.
type Middleware func(req *http.Request, next MiddlewareNext) (*http.Response, error)

// MiddlewareNext sends the request on through the rest of the chain.
type MiddlewareNext func(req *http.Request) (*http.Response, error)

type operationKey struct{}

// OperationFrom returns the name of the SDK operation a request belongs to:
// the service and the method the caller called, such as "Agents.List",
// "Agents.All" (every page of a range over it), "Properties.Enrich" or
// "DeliveryJob.Wait" (every poll). It is the name the logs, the response
// metadata (ResponseMeta.Operation), the observer's operations and a
// middleware all use; docs/operations.md lists them. A middleware
// (WithMiddleware) or the transport of a client given by WithHTTPClient
// reads it from the request's context; it is empty for a context the SDK
// did not make.
func OperationFrom(ctx context.Context) string {
	if o, _ := ctx.Value(operationKey{}).(*operation); o != nil {
		return o.name
	}
	return ""
}

// DefaultRetryBudget is the size of a client's retry budget: with the
// default 3 retries, about 33 calls failing through every retry after a
// 503 empty a full budget.
const DefaultRetryBudget = retry.DefaultBudget
