package export

import (
	"net/url"
	"testing"
)

func TestEscapePathValue(t *testing.T) {
	for in, want := range map[string]string{
		"Los Angeles":   "Los Angeles",
		"":              MissingValue,
		"A/B":           "A%2FB",
		"x=y":           "x%3Dy",
		"100%":          "100%25",
		"a:b?c#d":       "a%3Ab%3Fc%23d",
		"tab\there":     "tab%09here",
		"O'Brien":       "O%27Brien",
		"Coeur d'Alène": "Coeur d%27Alène",
	} {
		got := escapePathValue(in)
		if got != want {
			t.Errorf("escapePathValue(%q) = %q, want %q", in, got, want)
		}
		// DuckDB and Spark decode %XX: the value comes back.
		if back, err := url.PathUnescape(got); in != "" && (err != nil || back != in) {
			t.Errorf("%q decodes to %q, %v", got, back, err)
		}
	}
	for v, want := range map[any]string{"CA": "CA", 2024.0: "2024", 2.5: "2.5", true: "true", int64(7): "7"} {
		if got := valueText(v); got != want {
			t.Errorf("valueText(%v) = %q, want %q", v, got, want)
		}
	}
}
