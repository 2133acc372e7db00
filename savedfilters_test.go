package lendgraph_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func TestSavedFiltersService_Lifecycle(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(50))
	c := srv.Client()
	ctx := context.Background()
	first, err := c.SavedFilters.Create(ctx, &lendgraph.CreateSavedFilterRequest{Name: "Texas LOs", Target: "originators",
		Icon:  &lendgraph.FilterIcon{Type: "emoji", Color: "blue"},
		Query: &lendgraph.ListRequest{FlatFilters: map[string]any{"state": "TX"}}, UIState: map[string]any{"tab": "map"}})
	if err != nil {
		t.Fatal(err)
	}
	if first.ID == "" || first.Kind != lendgraph.KindFilter || first.Visibility != lendgraph.VisibilityPrivate || first.Fidelity != lendgraph.FidelityExact ||
		first.QueryVersion != 1 || first.UIStateVersion != 1 || first.Stale || first.CreatedAt.IsZero() || first.Icon.Color != "blue" {
		t.Fatalf("%+v", first)
	}
	var q lendgraph.ListRequest
	if err := json.Unmarshal(first.Query, &q); err != nil || q.FlatFilters["state"] != "TX" {
		t.Fatalf("%v %s", err, first.Query)
	}
	// A filter on a field the target lacks is kept but stale; unknown query members are unmapped.
	second, err := c.SavedFilters.Create(ctx, &lendgraph.CreateSavedFilterRequest{Name: "Old", Target: "agents",
		Query: map[string]any{"flatFilters": map[string]any{"favoriteColor": "red"}, "legacyScope": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !second.Stale || len(second.StaleIssues) != 1 || second.StaleIssues[0].PathString() != "query.flatFilters.favoriteColor" ||
		len(second.Unmapped) != 1 || second.Unmapped[0] != "legacyScope" {
		t.Fatalf("%+v", second)
	}
	list, err := c.SavedFilters.List(ctx, nil)
	if err != nil || len(list) != 2 || list[0].ID != first.ID {
		t.Fatalf("oldest first: %v %+v", err, list)
	}
	list, err = c.SavedFilters.List(ctx, &lendgraph.SavedFiltersRequest{Target: "agents", Kind: lendgraph.KindFilter})
	if err != nil || len(list) != 1 || list[0].ID != second.ID {
		t.Fatalf("narrowed: %v %+v", err, list)
	}
	up, err := c.SavedFilters.Update(ctx, first.ID, &lendgraph.UpdateSavedFilterRequest{Name: "Texas", Query: map[string]any{"period": "2024"}})
	if err != nil || up.Name != "Texas" || up.QueryVersion != 2 || up.UIStateVersion != 1 || up.Target != "originators" {
		t.Fatalf("%v %+v", err, up)
	}
	del, err := c.SavedFilters.Delete(ctx, first.ID)
	if err != nil || !del.Deleted {
		t.Fatalf("%v %+v", err, del)
	}
	_, err = c.SavedFilters.Delete(ctx, first.ID)
	wantStatus(t, err, http.StatusNotFound)
}

func TestSavedFiltersService_ValidationErrors(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(50))
	c := srv.Client()
	ctx := context.Background()
	_, err := c.SavedFilters.Create(ctx, &lendgraph.CreateSavedFilterRequest{Name: "Bad", Target: "originators",
		Query: map[string]any{"period": "someday", "advancedFilters": map[string]any{"field": "x", "op": "like"}}})
	var ve *lendgraph.ValidationError
	if !errors.As(err, &ve) || ve.Code != "invalid_saved_filter" || len(ve.Issues) != 2 {
		t.Fatalf("%T %v", err, err)
	}
	paths := ve.Issues[0].PathString() + " " + ve.Issues[1].PathString()
	if !strings.Contains(paths, "query.period") || !strings.Contains(paths, "query.advancedFilters") {
		t.Fatalf("paths %s", paths)
	}
	f, err := c.SavedFilters.Create(ctx, &lendgraph.CreateSavedFilterRequest{Name: "ok", Target: "loans", Query: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	// A new query is validated as on create.
	_, err = c.SavedFilters.Update(ctx, f.ID, &lendgraph.UpdateSavedFilterRequest{Query: map[string]any{"period": "soon"}})
	if !errors.As(err, &ve) || ve.Issues[0].PathString() != "query.period" {
		t.Fatalf("%v", err)
	}
	// The target cannot change: UpdateSavedFilterRequest has no Target, and the
	// fake refuses a raw attempt.
	err = c.Do(ctx, http.MethodPatch, "/v1/saved-filters/"+f.ID, map[string]any{"target": "agents"}, nil)
	if !errors.As(err, &ve) || ve.Code != "target_immutable" {
		t.Fatalf("%v", err)
	}
	// Another organization sees none of it; a teammate does not see private filters.
	other := srv.Client(lendgraph.WithAPIKey(srv.NewCaller("org_other").Key))
	if l, _ := other.SavedFilters.List(ctx, nil); len(l) != 0 {
		t.Fatal("another org sees saved filters")
	}
	_, err = other.SavedFilters.Delete(ctx, f.ID)
	wantStatus(t, err, http.StatusNotFound)
	mate := srv.Client(lendgraph.WithAPIKey(srv.NewCaller(lendgraphtest.DefaultOrg).Key))
	if l, _ := mate.SavedFilters.List(ctx, nil); len(l) != 0 {
		t.Fatal("teammate sees a private filter")
	}
}

func TestSavedFiltersService_ClientChecks(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(10))
	c := srv.Client()
	ctx := context.Background()
	for _, id := range []string{"", "has space", "a/b", strings.Repeat("x", 33), "ünï"} {
		_, err := c.SavedFilters.Delete(ctx, id)
		wantInvalid(t, srv, err, "id")
		_, err = c.SavedFilters.Update(ctx, id, &lendgraph.UpdateSavedFilterRequest{Name: "x"})
		wantInvalid(t, srv, err, "id")
	}
	_, err := c.SavedFilters.Update(ctx, "ok_id-1", &lendgraph.UpdateSavedFilterRequest{})
	wantInvalid(t, srv, err, "update")
	_, err = c.SavedFilters.Create(ctx, &lendgraph.CreateSavedFilterRequest{Target: "x", Query: map[string]any{}})
	wantInvalid(t, srv, err, "Name")
	_, err = c.SavedFilters.Create(ctx, &lendgraph.CreateSavedFilterRequest{Name: "x", Query: map[string]any{}})
	wantInvalid(t, srv, err, "Target")
	// The fake checks ids too.
	err = c.Do(ctx, http.MethodDelete, "/v1/saved-filters/"+strings.Repeat("x", 33), nil, nil)
	var ve *lendgraph.ValidationError
	if !errors.As(err, &ve) || ve.Code != "invalid_id" {
		t.Fatalf("%v", err)
	}
}

func TestSavedFilter_KeepsUnknown(t *testing.T) {
	var f lendgraph.SavedFilter
	in := `{"id":"a","kind":"crm_view","target":"crm","visibility":"org","fidelity":"lossy","icon":{"type":"emoji","color":"red","glyph":"x"},"query":{"a":1},"pinned":true,"createdAt":"2026-01-02T03:04:05Z"}`
	if err := json.Unmarshal([]byte(in), &f); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(f)
	for _, m := range []string{`"pinned":true`, `"glyph":"x"`, `"kind":"crm_view"`, `"fidelity":"lossy"`, `"query":{"a":1}`} {
		if !strings.Contains(string(out), m) {
			t.Fatalf("%s lost: %s", m, out)
		}
	}
}

// Saved-filter ids are refused before any request unless they match
// [\w-]{1,32}, so no escaping can reach the server.
func TestSavedFiltersService_IDRefused(t *testing.T) {
	c, rec := recordingClient(t)
	for _, id := range []string{"a/b", "prop 1", "100%"} {
		if _, err := c.SavedFilters.Delete(context.Background(), id); err == nil {
			t.Errorf("Delete(%q) sent", id)
		}
	}
	if rec.received != 0 {
		t.Fatalf("%d requests reached the server", rec.received)
	}
}
