package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// recordTypes are the SDK's record types, by resource: the fields the API
// reference shows for each.
var recordTypes = map[string]reflect.Type{
	"agents":      reflect.TypeFor[lendgraph.Agent](),
	"originators": reflect.TypeFor[lendgraph.Originator](),
	"companies":   reflect.TypeFor[lendgraph.Company](),
	"loans":       reflect.TypeFor[lendgraph.Loan](),
	"properties":  reflect.TypeFor[lendgraph.Property](),
	"branches":    reflect.TypeFor[lendgraph.Branch](),
	"sales":       reflect.TypeFor[lendgraph.Sale](),
	"market":      reflect.TypeFor[lendgraph.MarketRecord](),
}

// field is one field of a resource's records, as the fields command lists it.
type field struct {
	Name string `json:"name"`
	Type string `json:"type"` // JSON type: string, number, boolean, array, object
	// From is "reference" (the API reference and the SDK's record type
	// show it) or "record" (a record the API sent has it; --sample).
	From string `json:"from"`
}

// referenceFields lists the fields of a resource's record type, in the
// type's order.
func referenceFields(resource string) []field {
	t := recordTypes[resource]
	if t == nil {
		return nil
	}
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || name == "" || name == "-" {
			continue // Extra (",unknown") and untagged fields
		}
		out = append(out, field{Name: name, Type: jsonType(sf.Type), From: "reference"})
	}
	return out
}

func fieldNames(fs []field) []string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return names
}

// jsonType names the JSON type a Go type encodes as.
func jsonType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[json.RawMessage]() {
		return "any" // kept as sent: the reference does not show its shape
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number"
	}
	return "any"
}

// valueType names the JSON type of a decoded value.
func valueType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64, json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

func (a *app) fieldsCommand() *cobra.Command {
	var sample bool
	cmd := &cobra.Command{
		Use:   "fields RESOURCE",
		Short: "List the fields of a resource's records (names for --fields, --filter, --sort, --by)",
		Long: `fields lists the fields of RESOURCE's records (` + strings.Join(resourceNames, ", ") + `) with
their JSON types: the fields the API reference shows, which the SDK's record
types carry. The reference does not show every field a record has; --sample
also lists the fields of one record the API sends (one list request of one
record, which charges nothing), marked "record".

Names are the API's camelCase names, as --fields, --filter, --sort and
export --by take them.`,
		Example: `  lendgraph fields agents
  lendgraph fields loans --sample --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := checkResource(name); err != nil {
				return err
			}
			fields := referenceFields(name)
			if sample {
				c, err := a.clientFor()
				if err != nil {
					return err
				}
				res, err := resourceOf(c, name)
				if err != nil {
					return err
				}
				rec, err := res.first(cmd.Context(), &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 1}})
				if err != nil {
					return err
				}
				if rec != nil {
					b, err := json.Marshal(rec)
					if err != nil {
						return err
					}
					var m map[string]any
					if err := json.Unmarshal(b, &m); err != nil {
						return err
					}
					known := fieldNames(fields)
					for _, k := range slices.Sorted(maps.Keys(m)) {
						if !slices.Contains(known, k) {
							fields = append(fields, field{Name: k, Type: valueType(m[k]), From: "record"})
						}
					}
				}
			}
			if a.jsonOut {
				return a.writeJSONLine(map[string]any{"resource": name, "fields": fields})
			}
			var b strings.Builder
			for _, f := range fields {
				fmt.Fprintf(&b, "%s\t%s\t%s\n", f.Name, f.Type, f.From)
			}
			_, err := fmt.Fprint(a.stdout, b.String())
			return err
		},
	}
	cmd.Flags().BoolVar(&sample, "sample", false, "also list the fields of one record the API sends (one list request)")
	return cmd
}

// suggestField is the name in have that name was most likely meant to be
// ("FullName" for "fullName", "fulName" for "fullName"): the same but for
// case, else one at most two edits away; "" when none is close.
func suggestField(name string, have []string) string {
	best, bestD := "", 3
	for _, h := range have {
		if strings.EqualFold(h, name) {
			return h
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(h)); d < bestD && d < len(name)/2 {
			best, bestD = h, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
