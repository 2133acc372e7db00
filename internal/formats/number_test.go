package formats

import (
	"encoding/json"
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

// isComposite is isJSONComposite's reference: one valid JSON object or
// array, as encoding/json's Valid sees it, with no space around it.
func isComposite(s string) bool {
	return strings.TrimSpace(s) == s && len(s) > 0 && (s[0] == '{' || s[0] == '[') && json.Valid([]byte(s))
}

var compositeCases = []string{"", "{}", "[]", "{", "[", "{]", "[}", `{"a":1}`, `{"a":1,}`, `[1,2,]`, `{"a" 1}`,
	`{"a":1}}`, `{"a":1} }`, `[1] ]`, `{"a":[1,{"b":null}],"a":true}`, `["\u00e9","\x"]`, `["\uZZZZ"]`,
	"[\"\xff\"]", "[\"\x01\"]", `[01]`, `[1.]`, `[-0.5e+3]`, `[tru]`, `[true, false , null ]`, "[\n1\t]",
	strings.Repeat("[", 65) + strings.Repeat("]", 65), strings.Repeat("[", 65) + strings.Repeat("]", 64),
	strings.Repeat("[", 200) + "1" + strings.Repeat("]", 200), `{"office":{"city":"Jackson","name":"Coldwell Banker Jackson"}}`}

func TestIsJSONCompositeMatchesValid(t *testing.T) {
	for _, c := range compositeCases {
		if got, want := isJSONComposite(c), isComposite(c); got != want {
			t.Errorf("isJSONComposite(%q) = %v, want %v", c, got, want)
		}
	}
}

func FuzzIsJSONComposite(f *testing.F) {
	for _, s := range compositeCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isJSONComposite(s), isComposite(s); got != want {
			t.Fatalf("isJSONComposite(%q) = %v, reference %v", s, got, want)
		}
	})
}

var validCases = append([]string{" ", "1", " 1 ", "-0.5e3", "01", `"a"`, `"\x"`, "\"\xff\"", "true", " null\n", "nul", "1 2",
	`{} {}`, "\t[1]\r\n", `"a" "b"`}, compositeCases...)

func TestValidJSONMatchesValid(t *testing.T) {
	for _, c := range validCases {
		if got, want := ValidJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("ValidJSON(%q) = %v, encoding/json.Valid %v", c, got, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range validCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := ValidJSON(b), json.Valid(b); got != want {
			t.Fatalf("ValidJSON(%q) = %v, encoding/json.Valid %v", b, got, want)
		}
	})
}

// The check of every cell of a csv column the row type does not declare
// (BENCHMARKS.md): the scan against encoding/json's Valid.
func BenchmarkIsJSONComposite(b *testing.B) {
	cell := `{"city":"Myrtle Beach","name":"RE/MAX Myrtle Beach","state":"SC","tags":["luxury","investors"],"agents":12}`
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(cell)))
		for b.Loop() {
			if !isJSONComposite(cell) {
				b.Fatal("not a composite")
			}
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(cell)))
		for b.Loop() {
			if !json.Valid([]byte(cell)) {
				b.Fatal("not valid")
			}
		}
	})
}
