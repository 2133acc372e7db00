package lendgraph

import (
	"encoding/json"
	"fmt"
	"strings"
)

// EnrichmentEventPrefix starts the name of every bulk enrichment event.
// The reference gives only this prefix: the names after it, the payload,
// the subscription method and the delivery guarantees are not documented.
const EnrichmentEventPrefix = "enrichment.bulk."

// Event names the fake server (lendgraphtest) emits. They are the likely
// names, not ones the reference gives; match on EnrichmentEventPrefix and
// the payload's status when it matters.
const (
	EventEnrichmentCompleted = "enrichment.bulk.completed"
	EventEnrichmentFailed    = "enrichment.bulk.failed"
	EventEnrichmentCancelled = "enrichment.bulk.cancelled"
)

// EnrichmentEvent is one bulk enrichment event, usable instead of polling
// for completion.
type EnrichmentEvent struct {
	// Name starts with EnrichmentEventPrefix.
	Name string
	// Payload is the event's data exactly as sent (nil when absent).
	Payload json.RawMessage
	// Extra holds every other member of the event body (ids, timestamps).
	Extra Fields
}

// ParseEnrichmentEvent parses a JSON event body. The body's shape is not
// documented: the name is read from "name", "event" or "type", the payload
// from "payload" or "data"; the rest goes to Extra. A name without the
// enrichment.bulk. prefix is an error.
func ParseEnrichmentEvent(body []byte) (*EnrichmentEvent, error) {
	var m Fields
	if err := unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("lendgraph: enrichment event: the body is not a JSON object: %w", err)
	}
	ev := &EnrichmentEvent{}
	for _, k := range []string{"name", "event", "type"} {
		if v, ok := m.Get(k); ok && kindOf(v) == '"' {
			if err := unmarshal(v, &ev.Name); err == nil {
				m.Delete(k)
				break
			}
		}
	}
	if ev.Name == "" {
		return nil, fmt.Errorf("lendgraph: enrichment event: no event name (looked for a string member name, event or type)")
	}
	if !strings.HasPrefix(ev.Name, EnrichmentEventPrefix) {
		return nil, fmt.Errorf("lendgraph: enrichment event: %q is not an enrichment event (names start with %q)", ev.Name, EnrichmentEventPrefix)
	}
	for _, k := range []string{"payload", "data"} {
		if v, ok := m.Get(k); ok {
			ev.Payload = v
			m.Delete(k)
			break
		}
	}
	ev.Extra = m
	return ev, nil
}

// Job decodes the payload as a job status record, which is what the fake
// sends (jobId, status, the counts, error); the real payload is not
// documented, so check the fields you rely on.
func (e *EnrichmentEvent) Job() (*EnrichJobStatus, error) {
	if len(e.Payload) == 0 {
		return nil, fmt.Errorf("lendgraph: enrichment event %s has no payload", e.Name)
	}
	var st EnrichJobStatus
	if err := unmarshal(e.Payload, &st); err != nil {
		return nil, fmt.Errorf("lendgraph: enrichment event %s: payload: %w", e.Name, err)
	}
	return &st, nil
}
