package lendgraph_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func TestLocationsService_SuggestAndRetrieve(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(500))
	c := srv.Client()
	ctx := context.Background()
	sug, err := c.Locations.Suggest(ctx, "aus", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(sug) == 0 {
		t.Fatal("no suggestions")
	}
	a := sug[0]
	if a.ID != "city_tx_austin" || a.Source != lendgraph.SourceDictionary || a.PlaceFormatted != "Austin, TX" || a.FullAddress == "" || a.MapID == "" || a.FeatureType == "" || a.TotalCount == 0 {
		t.Fatalf("%+v", a)
	}
	// The id is accepted by city filters (here through the count's normalization).
	n, err := c.Properties.Count(ctx, &lendgraph.ListRequest{FlatFilters: map[string]any{"city": a.ID}})
	if err != nil || n.Total != a.TotalCount {
		t.Fatalf("count by id %v %+v, want %d", err, n, a.TotalCount)
	}
	// A mapping provider's spelling finds the dictionary place.
	ft, err := c.Locations.Suggest(ctx, "Ft W", 10)
	if err != nil || len(ft) != 1 || ft[0].ID != "city_tx_fort-worth" {
		t.Fatalf("%v %+v", err, ft)
	}
	if !strings.Contains(srv.Requests()[len(srv.Requests())-1].Query, "limit=10") {
		t.Fatal("limit not sent")
	}
	loc, err := c.Locations.Retrieve(ctx, a.MapID)
	if err != nil || loc.Lat == 0 || loc.Lon == 0 || loc.Name != "Austin" {
		t.Fatalf("%v %+v", err, loc)
	}
	addr, err := c.Locations.Suggest(ctx, "1", 3)
	if err != nil || len(addr) != 3 || addr[0].Source == lendgraph.SourceDictionary || addr[0].ID != "" {
		t.Fatalf("%v %+v", err, addr)
	}
	if loc, err := c.Locations.Retrieve(ctx, addr[0].MapID); err != nil || loc.FullAddress == "" || !loc.Extra.Has("postcode") {
		t.Fatalf("%v %+v", err, loc)
	}
	_, err = c.Locations.Retrieve(ctx, "nope")
	wantStatus(t, err, http.StatusNotFound)
}

func TestLocationsService_Validation(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(50))
	c := srv.Client()
	ctx := context.Background()
	_, err := c.Locations.Suggest(ctx, " ", 0)
	wantInvalid(t, srv, err, "q")
	_, err = c.Locations.Suggest(ctx, "a", 11)
	wantInvalid(t, srv, err, "limit")
	_, err = c.Locations.Suggest(ctx, "a", -1)
	wantInvalid(t, srv, err, "limit")
	_, err = c.Locations.Retrieve(ctx, "")
	wantInvalid(t, srv, err, "mapID")
	for _, q := range []string{"q=", "q=a&limit=11", "q=a&limit=0"} {
		wantStatus(t, c.Do(ctx, http.MethodGet, "/v1/locations/suggest?"+q, nil, nil), http.StatusBadRequest)
	}
}

func TestLocationSuggestion_KeepsUnknown(t *testing.T) {
	var s lendgraph.LocationSuggestion
	if err := json.Unmarshal([]byte(`{"id":"x","source":"mapbox","type":"poi","bbox":[1,2]}`), &s); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(s)
	if s.Source != "mapbox" || !strings.Contains(string(out), `"bbox":[1,2]`) {
		t.Fatalf("%+v %s", s, out)
	}
}
