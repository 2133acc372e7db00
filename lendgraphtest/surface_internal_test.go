package lendgraphtest

import (
	"testing"
	"time"
)

func TestNormalizeTitle(t *testing.T) {
	for in, want := range map[string]string{
		"First American Title Co": "first american", "First American Title": "first american",
		"Fidelity Natl Title Inc": "fidelity national", "Fidelity National Title": "fidelity national",
		"Chicago Title Company": "chicago", "Chicago Title LLC": "chicago", "ABC Escrow, Inc.": "abc",
		"Attorney": "attorney", "Accommodation": "accommodation",
	} {
		if got, ex := normalizeTitle(in); ex || got != want {
			t.Errorf("%q: got %q excluded=%v, want %q", in, got, ex, want)
		}
	}
	for _, in := range []string{"None Available", "none availble", "NONE AVAILABEL", "Unknown", "n/a", "N/A", "ab", " x ", "Title Company"} {
		if got, ex := normalizeTitle(in); !ex {
			t.Errorf("%q ranked as %q", in, got)
		}
	}
}

func TestMovementWindow(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for dr, want := range map[string][3]any{
		"last_12_months": {"2025-11-01", "2026-10-31", 12},
		"last_1_months":  {"2026-10-01", "2026-10-31", 1},
		"year_to_date":   {"2026-01-01", "2026-10-31", 10},
		"2024":           {"2024-01-01", "2024-12-31", 12},
		"fy_2024":        {"2024-01-01", "2024-12-31", 12},
		"fiscal_2023":    {"2023-01-01", "2023-12-31", 12},
	} {
		s, e, m := movementWindow(dr, now)
		if s.Format(time.DateOnly) != want[0] || e.Format(time.DateOnly) != want[1] || m != want[2] {
			t.Errorf("%s: %s %s %d", dr, s.Format(time.DateOnly), e.Format(time.DateOnly), m)
		}
	}
}

func TestCityID(t *testing.T) {
	if got := cityID("TX", "Fort Worth"); got != "city_tx_fort-worth" {
		t.Fatal(got)
	}
	if got := cityID("FL", "Miami-Dade County"); got != "city_fl_miami-dade-county" {
		t.Fatal(got)
	}
}
