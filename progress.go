package lendgraph

import "time"

// WithProgress returns an option that calls fn with each progress record
// of the call it is given to: the status records a job's Wait fetches
// (*DeliveryStatus for a delivery, *EnrichJobStatus for an enrichment, the
// last one included), the bytes a download has written
// (*DownloadProgress), or the answers a market movement query gets while
// the server computes it (*MovementProgress). fn runs on the goroutine
// that makes the call (a parallel download's: one call at a time); keep it
// quick.
//
// The record type says which calls take it, and a call of another kind
// does not compile: an enrichment job's Wait takes
// WithProgress(func(*EnrichJobStatus)), never a delivery's.
func WithProgress[P ProgressRecord](fn func(*P)) Progress[P] { return fn }

// ProgressRecord lists what WithProgress reports.
type ProgressRecord interface {
	DeliveryStatus | EnrichJobStatus | DownloadProgress | MovementProgress
}

// Progress is a progress callback (see WithProgress). A call takes it
// among its options where its record type fits: DeliveryJob.Wait takes
// Progress[DeliveryStatus], EnrichJob.Wait Progress[EnrichJobStatus], a
// download Progress[DownloadProgress], Market.MostGained
// Progress[MovementProgress].
type Progress[P ProgressRecord] func(*P)

// DownloadProgress is how far a download is (see WithProgress).
type DownloadProgress struct {
	// Done counts the bytes written, those an interrupted earlier
	// DownloadFile left on disk included.
	Done int64
	// Total is the file's size, -1 when unknown.
	Total int64
}

// MovementProgress is a market movement answer that is not ready yet: the
// server answered 202 computing and asked for the request to be repeated
// after RetryAfter (see Market.MostGained).
type MovementProgress struct {
	RetryAfter time.Duration
}

// The options of the calls that report progress: each takes an Option or
// a WithProgress of its own record type. The unexported methods seal the
// interfaces: only Option and Progress implement them, and Progress only
// for its own record type.
type (
	// DeliveryWaitOption is an option of DeliveryJob.Wait: an Option, or
	// WithProgress(func(*DeliveryStatus)).
	DeliveryWaitOption interface{ deliveryWait(*DeliveryStatus) }
	// EnrichWaitOption is an option of EnrichJob.Wait: an Option, or
	// WithProgress(func(*EnrichJobStatus)).
	EnrichWaitOption interface{ enrichWait(*EnrichJobStatus) }
	// DownloadOption is an option of a download (DeliveryJob.Download and
	// DownloadFile, EnrichJob.Download): an Option, or
	// WithProgress(func(*DownloadProgress)).
	DownloadOption interface{ download(*DownloadProgress) }
	// MostGainedOption is an option of Market.MostGained: an Option, or
	// WithProgress(func(*MovementProgress)).
	MostGainedOption interface{ mostGained(*MovementProgress) }
)

func (Option) deliveryWait(*DeliveryStatus) {}
func (Option) enrichWait(*EnrichJobStatus)  {}
func (Option) download(*DownloadProgress)   {}
func (Option) mostGained(*MovementProgress) {}
func (Progress[P]) deliveryWait(*P)         {}
func (Progress[P]) enrichWait(*P)           {}
func (Progress[P]) download(*P)             {}
func (Progress[P]) mostGained(*P)           {}

// splitOptions sorts the options of a call that reports progress of type
// P into its Options and its progress callback (the last one given).
func splitOptions[P ProgressRecord, O any](opts []O) ([]Option, func(*P)) {
	var plain []Option
	var progress func(*P)
	for _, o := range opts {
		switch o := any(o).(type) {
		case nil:
			plain = append(plain, nil) // refused as a nil option
		case Option:
			plain = append(plain, o)
		case Progress[P]:
			progress = o
		}
	}
	return plain, progress
}
