package main

import "testing"

// TestEnrichPlantedLink: with a symbolic link planted at FILE.part, enrich
// -o FILE refuses before submitting and the file it points to keeps its
// bytes.
func TestEnrichPlantedLink(t *testing.T) {
	c := newCLI(t)
	ids, _ := propertyIDs(t, c, 5)
	check := plant(t, c.path("owners.ndjson.part"))
	r := c.run("enrich", "--ids", ids, "--yes", "-o", "owners.ndjson")
	check("enrich -o with FILE.part planted")
	wantCode(t, r, exitFailure)
	if n := c.srv.CountRequests("POST", "/v1/properties/enrich-bulk"); n != 0 {
		t.Errorf("%d submits with FILE.part planted", n)
	}
}
