package lendgraphtest

import (
	"slices"
	"testing"
)

func TestMatchWord(t *testing.T) {
	for _, tc := range []struct {
		term, word string
		prefix     bool
		want       int
	}{
		{"smi", "smith", true, 0},
		{"smi", "smith", false, -1}, // only the last word of a query is a prefix
		{"smith", "smith", false, 0},
		{"smith", "smithson", true, 0},
		{"smitj", "smith", true, 1},    // substitution
		{"smitj", "smith", false, 1},   // on the whole word
		{"smiith", "smith", true, 1},   // insertion
		{"smth", "smith", true, -1},    // too short for a typo
		{"johnsn", "johnson", true, 1}, // deletion, on a prefix
		{"johnsn", "johnson", false, 1},
		{"johnsn", "johnsonville", false, -1},
		{"jhonson", "johnson", true, -1},
		{"xyz", "smith", true, -1},
	} {
		if got := matchWord(tc.term, tc.word, tc.prefix); got != tc.want {
			t.Errorf("matchWord(%q, %q, %v) = %d, want %d", tc.term, tc.word, tc.prefix, got, tc.want)
		}
	}
}

func TestParseQ(t *testing.T) {
	got := parseQ(`John  "van der" -smith O'Brien Lo`)
	want := []qterm{{words: []string{"john"}}, {words: []string{"van", "der"}}, {words: []string{"smith"}, negative: true},
		{words: []string{"o"}}, {words: []string{"brien"}}, {words: []string{"lo"}, prefix: true}}
	if !slices.EqualFunc(got, want, func(a, b qterm) bool {
		return slices.Equal(a.words, b.words) && a.prefix == b.prefix && a.negative == b.negative
	}) {
		t.Fatalf("%+v", got)
	}
	if got := parseQ("john "); got[0].prefix {
		t.Fatal("a query ending with a space has no prefix word")
	}
	if got := parseQ("a b c d e f g h i j k l"); len(got) != maxQueryWords {
		t.Fatalf("%d terms", len(got))
	}
}

func TestSearchIndexLazy(t *testing.T) {
	s := NewServer(t, WithDefaultRows(300))
	if s.area.searchIndexes["agents"].docs != nil {
		t.Fatal("index built before use")
	}
	ix := s.hostIndex("agents")
	if len(ix.docs) != 300 || len(ix.match(nil, ix.searchable, strategyLast)) != 300 {
		t.Fatalf("%d docs", len(ix.docs))
	}
	if s.area.searchIndexes["companies"].docs != nil {
		t.Fatal("an unused index was built")
	}
}
