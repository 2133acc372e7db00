package formats

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// isJSONNumber is the reference: a valid JSON value whose kind is a number.
func isJSONNumber(s string) bool {
	v := jsontext.Value(s)
	return strings.TrimSpace(s) == s && v.IsValid() && v.Kind() == '0' // IsValid allows surrounding space
}

func TestIsNumberMatchesJSON(t *testing.T) {
	cases := []string{"", "0", "-0", "00", "01", "-", "1.", ".5", "1.5", "1e5", "1E+5", "1e-5", "1e", "1e+",
		"-12.50e3", "12a", "1.2.3", "9007199254740993", "+1", " 1", "1 ", "0.0", "-0.0e-0", "1_000"}
	for _, c := range cases {
		if got, want := isNumber(c), isJSONNumber(c); got != want {
			t.Errorf("isNumber(%q) = %v, want %v", c, got, want)
		}
	}
}

func FuzzIsNumber(f *testing.F) {
	for _, s := range []string{"0", "-1.5e+10", "01", "1.", "abc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isNumber(s), isJSONNumber(s); got != want {
			t.Fatalf("isNumber(%q) = %v, reference %v", s, got, want)
		}
	})
}
