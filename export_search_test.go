package lendgraph

import "time"

// SetSearchClock makes c's search token source judge expiry by now (the
// fake server's clock in tests). Call it before the first search call.
func SetSearchClock(c *Client, now func() time.Time) { c.Search.now = now }
