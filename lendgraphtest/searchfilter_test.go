package lendgraphtest

import (
	"encoding/json"
	"strings"
	"testing"
)

// The error messages of Meilisearch's filter parser, from its own tests
// (crates/filter-parser/src/lib.rs and crates/meilisearch/tests/search/errors.rs).
func TestFilterParseErrorsAsMeilisearch(t *testing.T) {
	const ops = "Was expecting an operation `=`, `!=`, `>=`, `>`, `<=`, `<`, `IN`, `NOT IN`, `TO`, `EXISTS`, `NOT EXISTS`, `IS NULL`, `IS NOT NULL`, `IS EMPTY`, `IS NOT EMPTY`, `CONTAINS`, `NOT CONTAINS`, `STARTS WITH`, `NOT STARTS WITH`, `_geoRadius`, `_geoBoundingBox` or `_geoPolygon` "
	for _, tc := range []struct{ filter, want string }{
		{"states === ", "Was expecting a value but instead got nothing.\n9:9 states === "},
		{"channel = Ponce = 12", "Found unexpected characters at the end of the filter: `= 12`. You probably forgot an `OR` or an `AND` rule.\n17:21 channel = Ponce = 12"},
		{"channel =    ", "Was expecting a value but instead got nothing.\n14:14 channel =    "},
		{"channel = 🐻", "Was expecting a value but instead got `🐻`.\n11:12 channel = 🐻"},
		{"channel = 🐻 AND followers < 100", "Was expecting a value but instead got `🐻`.\n11:12 channel = 🐻 AND followers < 100"},
		{"'OR'", ops + "at `\\'OR\\'`.\n1:5 'OR'"},
		{"OR", "Was expecting a value but instead got `OR`, which is a reserved keyword. To use `OR` as a field name or a value, surround it by quotes.\n1:3 OR"},
		{"channel Ponce", ops + "at `channel Ponce`.\n1:14 channel Ponce"},
		{"channel = Ponce OR", ops + "but instead got nothing.\n19:19 channel = Ponce OR"},
		{"_geoRadius", "The `_geoRadius` filter must be in the form: `_geoRadius(latitude, longitude, radius, optionalResolution)`.\n11:11 _geoRadius"},
		{"_geoRadius = 12", "The `_geoRadius` filter must be in the form: `_geoRadius(latitude, longitude, radius, optionalResolution)`.\n11:16 _geoRadius = 12"},
		{"_geoBoundingBox", "The `_geoBoundingBox` filter expects two pairs of arguments: `_geoBoundingBox([latitude, longitude], [latitude, longitude])`.\n16:16 _geoBoundingBox"},
		{"_geoPoint(12, 13, 14)", "`_geoPoint` is a reserved keyword and thus can't be used as a filter expression. Use the `_geoRadius(latitude, longitude, distance)` or `_geoBoundingBox([latitude, longitude], [latitude, longitude])` built-in rules to filter on `_geo` coordinates.\n1:22 _geoPoint(12, 13, 14)"},
		{"position <= _geoPoint(12, 13, 14)", "`_geoPoint` is a reserved keyword and thus can't be used as a filter expression. Use the `_geoRadius(latitude, longitude, distance)` or `_geoBoundingBox([latitude, longitude], [latitude, longitude])` built-in rules to filter on `_geo` coordinates.\n13:34 position <= _geoPoint(12, 13, 14)"},
		{"_geo = Glass", "`_geo` is a reserved keyword and thus can't be used as a filter expression. Use the `_geoRadius(latitude, longitude, distance)` or `_geoBoundingBox([latitude, longitude], [latitude, longitude])` built-in rules to filter on `_geo` coordinates.\n1:13 _geo = Glass"},
		{"position <= _geoRadius(12, 13, 14)", "The `_geoRadius` filter is an operation and can't be used as a value.\n13:35 position <= _geoRadius(12, 13, 14)"},
		{"channel = 'ponce", "Expression `\\'ponce` is missing the following closing delimiter: `'`.\n11:17 channel = 'ponce"},
		{`channel = "ponce`, "Expression `\\\"ponce` is missing the following closing delimiter: `\"`.\n11:17 channel = \"ponce"},
		{"channel = mv OR (followers >= 1000", "Expression `(followers >= 1000` is missing the following closing delimiter: `)`.\n17:35 channel = mv OR (followers >= 1000"},
		{"channel = mv OR followers >= 1000)", "Found unexpected characters at the end of the filter: `)`. You probably forgot an `OR` or an `AND` rule.\n34:35 channel = mv OR followers >= 1000)"},
		{"colour NOT EXIST", ops + "at `colour NOT EXIST`.\n1:17 colour NOT EXIST"},
		{"subscribers 100 TO1000", ops + "at `subscribers 100 TO1000`.\n1:23 subscribers 100 TO1000"},
		{"channel = ponce ORdog != 'bernese mountain'", "Found unexpected characters at the end of the filter: `ORdog != \\'bernese mountain\\'`. You probably forgot an `OR` or an `AND` rule.\n17:44 channel = ponce ORdog != 'bernese mountain'"},
		{`name = "\x"`, "The filter is incomplete and requires Unknown additional bytes to be parsed.\n1:12 name = \"\\x\""},
		{"colour IN blue, green]", "Expected `[` after `IN` keyword.\n11:23 colour IN blue, green]"},
		{"colour IN [blue, green, 'blue' > 2]", "Expected only comma-separated field names inside `IN[..]` but instead found `> 2]`.\n32:36 colour IN [blue, green, 'blue' > 2]"},
		{"colour IN [blue, green, AND]", "Expected only comma-separated field names inside `IN[..]` but instead found `AND]`.\n25:29 colour IN [blue, green, AND]"},
		{"colour IN [blue, green", "Expected matching `]` after the list of field names given to `IN[`\n23:23 colour IN [blue, green"},
		{"colour IN ['blue, green", "Expression `\\'blue, green` is missing the following closing delimiter: `'`.\n12:24 colour IN ['blue, green"},
		{"x = EXISTS", "Was expecting a value but instead got `EXISTS`, which is a reserved keyword. To use `EXISTS` as a field name or a value, surround it by quotes.\n5:11 x = EXISTS"},
		{"AND = 8", "Was expecting a value but instead got `AND`, which is a reserved keyword. To use `AND` as a field name or a value, surround it by quotes.\n1:4 AND = 8"},
		{strings.Repeat("(", 50) + "x = 1" + strings.Repeat(")", 50), "The filter exceeded the maximum depth limit. Try rewriting the filter so that it contains fewer nested conditions.\n38:106 " + strings.Repeat("(", 50) + "x = 1" + strings.Repeat(")", 50)},
		{"NOT OR EXISTS AND EXISTS NOT EXISTS", "Was expecting a value but instead got `OR`, which is a reserved keyword. To use `OR` as a field name or a value, surround it by quotes.\n5:7 NOT OR EXISTS AND EXISTS NOT EXISTS"},
		{"value NULL", ops + "at `value NULL`.\n1:11 value NULL"},
		{"title & Glass", ops + "at `title & Glass`.\n1:14 title & Glass"},
		{"title = Glass XOR title = Glass", "Found unexpected characters at the end of the filter: `XOR title = Glass`. You probably forgot an `OR` or an `AND` rule.\n15:32 title = Glass XOR title = Glass"},
	} {
		_, err := parseFilterString(tc.filter)
		if err == nil || err.msg != tc.want || err.code != "invalid_search_filter" {
			t.Errorf("%q:\n got %v\nwant %s", tc.filter, err, tc.want)
		}
	}
}

func TestFilterEvaluation(t *testing.T) {
	doc := map[string]any{"states": []string{"TX", "CA"}, "cities": []string{"Austin"}, "name": "Summit Lending",
		"units": 12.0, "empty": []string{}, "null": nil}
	filterable := []string{"cities", "empty", "name", "null", "states", "units"}
	for _, tc := range []struct {
		filter string
		want   bool
	}{
		{`states = TX`, true},
		{`states = "tx"`, true},
		{`states = NY`, false},
		{`states != NY`, true},
		{`states != TX`, false},
		{`NOT states = TX`, false},
		{`NOT NOT states = TX`, true},
		{`states = NY OR cities = Austin`, true},
		{`states = NY OR cities = Austin AND name = x`, false},
		{`(states = NY OR cities = Austin) AND name = 'Summit Lending'`, true},
		{`states IN [NY, ca]`, true},
		{`states NOT IN [NY, ca]`, false},
		{`units > 11 AND units <= 12`, true},
		{`units 1 TO 11`, false},
		{`units 12 TO 20`, true},
		{`units = 12`, true},
		{`name > summa`, true},
		{`name >= zzz`, false},
		{`cities EXISTS`, true},
		{`zip NOT EXISTS`, true},
		{`empty IS EMPTY`, true},
		{`states IS NOT EMPTY`, true},
		{`null IS NULL`, true},
		{`states IS NULL`, false},
		{`name = "Summit \"Lending"`, false},
	} {
		e, err := parseFilterString(tc.filter)
		if err == nil {
			err = e.check(append(filterable, "zip"), nil)
		}
		if err != nil {
			t.Errorf("%q: %v", tc.filter, err)
			continue
		}
		if got := e.matches(doc); got != tc.want {
			t.Errorf("%q matched %v, want %v", tc.filter, got, tc.want)
		}
	}
	// Arrays: the inner ones ORed, the outer ANDed.
	e, err := parseFilterValue(json.RawMessage(`[["states = NY", "states = CA"], "cities = Austin", ""]`))
	if err != nil || !e.matches(doc) {
		t.Fatalf("array filter: %v", err)
	}
	for raw, want := range map[string]string{
		`true`:           "Invalid syntax for the filter parameter: `expected String, Array, found: true`.",
		`["a = 1", 2]`:   "Invalid syntax for the filter parameter: `expected String, [String], found: 2`.",
		`[["a = 1", 2]]`: "Invalid syntax for the filter parameter: `expected String, found: 2`.",
	} {
		if _, err := parseFilterValue(json.RawMessage(raw)); err == nil || err.msg != want {
			t.Errorf("%s: %v", raw, err)
		}
	}
	// Refused after parsing: attributes that are not filterable, CONTAINS.
	for filter, want := range map[string]string{
		"zip = 1":                  "Attribute `zip` is not filterable. Available filterable attribute patterns are: `cities, states`.\n1:4 zip = 1",
		"states = TX AND name = 1": "Attribute `name` is not filterable. Available filterable attribute patterns are: `cities, states`.\n17:21 states = TX AND name = 1",
		"states != echo AND states CONTAINS kefir": "Using `CONTAINS` in a filter requires enabling the `contains filter` experimental feature. See https://github.com/orgs/meilisearch/discussions/763\n27:35 states != echo AND states CONTAINS kefir",
		"_geoRadius(45.4, 9.1, 10)":                "Attribute `_geo` is not filterable. Available filterable attribute patterns are: `cities, states`.\n1:11 _geoRadius(45.4, 9.1, 10)",
	} {
		e, perr := parseFilterString(filter)
		if perr != nil {
			t.Errorf("%q: %v", filter, perr)
			continue
		}
		if err := e.check([]string{"cities", "states"}, nil); err == nil || err.msg != want {
			t.Errorf("%q:\n got %v\nwant %s", filter, err, want)
		}
	}
}
