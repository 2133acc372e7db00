package lendgraph_test

import (
	"reflect"
	"testing"

	"github.com/lendgraph/lendgraph-go"
)

// A method exists only where the endpoint does: analytics on agents,
// originators, loans, sales and market; bulk delivery on agents,
// originators, companies, loans, properties and branches (API.md).
func TestClient_CapabilitiesInTheTypes(t *testing.T) {
	c, err := lendgraph.NewClient(lendgraph.WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	services := map[string]struct {
		svc                 any
		analytics, delivery bool
	}{
		"Agents":      {c.Agents, true, true},
		"Originators": {c.Originators, true, true},
		"Companies":   {c.Companies, false, true},
		"Loans":       {c.Loans, true, true},
		"Properties":  {c.Properties, false, true},
		"Branches":    {c.Branches, false, true},
		"Sales":       {c.Sales, true, false},
		"Market":      {c.Market, true, false},
	}
	for name, s := range services {
		typ := reflect.TypeOf(s.svc)
		has := func(m string) bool { _, ok := typ.MethodByName(m); return ok }
		for _, m := range []string{"List", "All", "Pager", "Get"} {
			if !has(m) {
				t.Errorf("%s has no %s", name, m)
			}
		}
		for _, m := range []string{"Summary", "TimeSeries"} {
			if has(m) != s.analytics {
				t.Errorf("%s.%s exists: %v, want %v", name, m, has(m), s.analytics)
			}
		}
		for _, m := range []string{"Deliver", "DeliveryJob"} {
			if has(m) != s.delivery {
				t.Errorf("%s.%s exists: %v, want %v", name, m, has(m), s.delivery)
			}
		}
	}
	// Properties have their own typed chart, not the analytics one.
	if m, ok := reflect.TypeOf(c.Properties).MethodByName("Chart"); !ok || m.Type.Out(0) != reflect.TypeFor[*lendgraph.ChartResponse]() {
		t.Errorf("Properties.Chart: %v", m.Type)
	}
}
