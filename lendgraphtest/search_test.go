package lendgraphtest

import (
	"slices"
	"testing"
)

func TestMatchWord(t *testing.T) {
	for _, tc := range []struct {
		term, word string
		want       int
	}{
		{"smi", "smith", 0},
		{"smith", "smithson", 0},
		{"smitj", "smith", 1},    // substitution
		{"smiith", "smith", 1},   // insertion
		{"smth", "smith", -1},    // too short for a typo
		{"johnsn", "johnson", 1}, // deletion, on a prefix
		{"jhonson", "johnson", -1},
		{"xyz", "smith", -1},
	} {
		if got := matchWord(tc.term, tc.word); got != tc.want {
			t.Errorf("matchWord(%q, %q) = %d, want %d", tc.term, tc.word, got, tc.want)
		}
	}
}

func TestParseFilter(t *testing.T) {
	got, err := parseFilter(`states = "TX" AND cities = 'San Antonio' and states=CA`, false)
	want := []filterClause{{"states", "TX"}, {"cities", "San Antonio"}, {"states", "CA"}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("%v %v", got, err)
	}
	if got, err := parseFilter("state = TX AND city = Austin", true); err != nil || !slices.Equal(got, []filterClause{{"states", "TX"}, {"cities", "Austin"}}) {
		t.Fatalf("route syntax: %v %v", got, err)
	}
	for _, bad := range []string{"state = TX", "zip = 1", "states != TX", "states", "states = "} {
		if _, err := parseFilter(bad, false); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestSearchIndexLazy(t *testing.T) {
	s := NewServer(t, WithDefaultRows(300))
	if s.area.searchIndexes["agents"].docs != nil {
		t.Fatal("index built before use")
	}
	ix := s.hostIndex("agents")
	if len(ix.docs) != 300 || len(ix.search("", ix.searchable, nil, -1)) != 300 {
		t.Fatalf("%d docs", len(ix.docs))
	}
	if s.area.searchIndexes["companies"].docs != nil {
		t.Fatal("an unused index was built")
	}
}
