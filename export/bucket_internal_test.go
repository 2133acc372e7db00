package export

import (
	"errors"
	"fmt"
	"testing"
)

// codedError is a store's error with its service code, as the S3 SDK's
// API errors carry it.
type codedError struct{ code, msg string }

func (e codedError) Error() string     { return e.msg }
func (e codedError) ErrorCode() string { return e.code }

// TestExisted: a 412 is a lost claim whatever gcerrors.Code makes of it
// (s3blob v0.46 takes a message holding "301", as a request id may, for a
// missing bucket); other errors are not.
func TestExisted(t *testing.T) {
	lost := fmt.Errorf("writing: %w", codedError{"PreconditionFailed", "StatusCode: 412, RequestID: 18E3011, api error PreconditionFailed"})
	if !existed(lost) {
		t.Error("a 412 is not taken for an existing object")
	}
	for _, err := range []error{nil, errors.New("412"), codedError{"NoSuchKey", "301"}} {
		if existed(err) {
			t.Errorf("%v taken for an existing object", err)
		}
	}
}
