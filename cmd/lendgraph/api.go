package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// apiFlags are the api command's flags.
type apiFlags struct {
	method    string
	fields    []string // KEY=VALUE, typed
	rawFields []string // KEY=VALUE, strings
	input     string
}

func (a *app) apiCommand() *cobra.Command {
	var fl apiFlags
	cmd := &cobra.Command{
		Use:   "api PATH",
		Short: "Send a request to any API path and print the JSON answer",
		Long: `api sends one request to PATH (relative to the base URL, e.g. /v1/agents)
through the SDK's client: the API key, the retries and the redaction of
secrets apply as to every command. It prints the JSON answer on stdout
(indented; one line with --json; nothing for HEAD). A non-2xx answer
prints the error on stderr and exits 1 (3 for insufficient credits). It is
for what the other commands do not wrap, as gh api is for GitHub.
PATH may carry a query string (?a=1) but no # fragment: write a # that
belongs to the path or the query as %23.

The method is GET, or POST when a field or --input is given; -X sets it.
  -F KEY=VALUE   a field whose value is typed: true, false, null and JSON
                 numbers as such, anything else a string
  -f KEY=VALUE   a field whose value is a string, whatever it looks like
  KEY[SUB]=V     a field of a nested object; KEY[]=V appends to an array
  --input FILE   the request body, JSON as is (- for stdin); the fields
                 then go in the query string
With GET, HEAD and DELETE the fields are the query string (KEY as written,
VALUE as text); with other methods they make up the JSON body.

Retries: GET, HEAD, PUT, DELETE and OPTIONS are retried like reads (a
failed connection, a cut answer, 429, 5xx). Any other method (POST, PATCH)
may charge credits or act (a delivery submit, an enrichment): it is retried
only when the server certainly did not act (a 429, a connection that could
not be opened), never after the request may have reached it. When the
outcome is unknown (a connection lost after sending, a timeout, a 5xx) the
error says "outcome unknown": the call may have been charged; check (the
job list, your balance) before running it again.`,
		Example: `  lendgraph api /v1/agents/agt_0000042
  lendgraph api /v1/agents -F 'flatFilters[state]=TX' -F 'pagination[size]=2'
  lendgraph api '/v1/properties/prop_0000001/related?to=loans&limit=5'
  lendgraph api -X GET /v1/locations/suggest -f q=Austin`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			method, path, body, err := a.apiRequest(args[0], &fl)
			if err != nil {
				return err
			}
			c, err := a.clientFor()
			if err != nil {
				return err
			}
			var out *jsontext.Value
			if method != http.MethodHead {
				out = new(jsontext.Value)
			}
			if err := c.Do(cmd.Context(), method, path, body, out); err != nil || out == nil {
				return err
			}
			v := jsontext.Value(bytes.Clone(*out))
			lax := []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}
			if a.jsonOut {
				err = v.Compact(lax...)
			} else {
				err = v.Indent(append(lax, jsontext.WithIndent("  "))...)
			}
			if err != nil {
				return err
			}
			// The answer is printed as the server sent it, save the API key
			// should a server ever echo it.
			if a.apiKey != "" {
				v = bytes.ReplaceAll(v, []byte(a.apiKey), []byte("[redacted]"))
			}
			_, err = a.stdout.Write(append(v, '\n'))
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&fl.method, "method", "X", "", "the HTTP method (default: GET, or POST with fields or --input)")
	f.StringArrayVarP(&fl.fields, "field", "F", nil, "KEY=VALUE: a typed field (true, false, null, numbers; else a string) (repeatable)")
	f.StringArrayVarP(&fl.rawFields, "raw-field", "f", nil, "KEY=VALUE: a string field (repeatable)")
	f.StringVar(&fl.input, "input", "", "the request body, a JSON file (- for stdin)")
	return cmd
}

// apiRequest checks the api command's arguments and returns the method,
// the path (with its query string) and the body.
func (a *app) apiRequest(path string, fl *apiFlags) (method, full string, body any, err error) {
	if strings.TrimSpace(path) == "" {
		return "", "", nil, usagef("PATH is empty: give the path relative to the base URL (e.g. /v1/agents)")
	}
	// A fragment is never sent to a server; one the client folded into the
	// query string would ask for something else.
	if strings.Contains(path, "#") {
		return "", "", nil, usagef("PATH %q has a # fragment, which is not sent to the server: drop it, or write a # that belongs to the path or query as %%23", path)
	}
	if u, perr := url.Parse(path); perr != nil || u.Scheme != "" || u.Host != "" {
		return "", "", nil, usagef("PATH %q: give the path relative to the base URL (e.g. /v1/agents); the host comes from --base-url or $%s", path, lendgraph.EnvBaseURL)
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	params := len(fl.fields)+len(fl.rawFields) > 0
	method = strings.ToUpper(fl.method)
	switch {
	case method == "" && (params || fl.input != ""):
		method = http.MethodPost
	case method == "":
		method = http.MethodGet
	case strings.Trim(method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "":
		return "", "", nil, usagef("-X %q: want a method such as GET, POST, PATCH or DELETE", fl.method)
	}
	// The fields, typed or not, in the order given.
	type field struct {
		key, text string
		val       any
	}
	var all []field
	for _, set := range []struct {
		flag  string
		kv    []string
		typed bool
	}{{"-F", fl.fields, true}, {"-f", fl.rawFields, false}} {
		for _, kv := range set.kv {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return "", "", nil, usagef("%s %q: want KEY=VALUE", set.flag, kv)
			}
			var val any = v
			if set.typed {
				val = literal(v)
			}
			all = append(all, field{k, v, val})
		}
	}
	inQuery := fl.input != "" || method == http.MethodGet || method == http.MethodHead || method == http.MethodDelete
	if fl.input != "" {
		b, err := a.readInput(fl.input)
		if err != nil {
			return "", "", nil, err
		}
		if !jsontext.Value(b).IsValid() {
			return "", "", nil, usagef("--input %s: not one JSON value", fl.input)
		}
		body = jsontext.Value(b)
	}
	if inQuery && len(all) > 0 {
		q := url.Values{}
		for _, f := range all {
			q.Add(f.key, f.text)
		}
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + q.Encode()
	} else if len(all) > 0 {
		obj := map[string]any{}
		for _, f := range all {
			if err := setField(obj, f.key, f.val); err != nil {
				return "", "", nil, err
			}
		}
		body = obj
	}
	return method, path, body, nil
}

// readInput reads the --input file ("-" is stdin).
func (a *app) readInput(name string) ([]byte, error) {
	if name == "-" {
		b, err := io.ReadAll(a.stdin)
		if err != nil {
			return nil, fmt.Errorf("--input: %w", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, usagef("--input: %v", err)
	}
	return b, nil
}

// setField sets the field KEY (KEY[SUB]... for nested objects, a last []
// to append to an array) of obj to val.
func setField(obj map[string]any, key string, val any) error {
	bad := func(why string) error { return usagef("field %q: %s", key, why) }
	name, rest, nested := strings.Cut(key, "[")
	path := []string{name}
	for nested {
		seg, after, ok := strings.Cut(rest, "]")
		if !ok {
			return bad("a [ without its ]")
		}
		path = append(path, seg)
		if after == "" {
			break
		}
		if !strings.HasPrefix(after, "[") {
			return bad("write KEY[SUB][SUB2], with nothing between the brackets")
		}
		rest = after[1:]
	}
	appendTo := len(path) > 1 && path[len(path)-1] == ""
	if appendTo {
		path = path[:len(path)-1]
	}
	for _, seg := range path {
		if seg == "" {
			return bad("an empty name; only the last [] may be empty (append to an array)")
		}
	}
	m := obj
	for _, seg := range path[:len(path)-1] {
		switch next := m[seg].(type) {
		case nil:
			child := map[string]any{}
			m[seg], m = child, child
		case map[string]any:
			m = next
		default:
			return bad(fmt.Sprintf("%q is given as a value and as an object", seg))
		}
	}
	last := path[len(path)-1]
	prev, exists := m[last]
	switch {
	case appendTo:
		arr, ok := prev.([]any)
		if exists && !ok {
			return bad(fmt.Sprintf("%q is given as a value and as an array", last))
		}
		m[last] = append(arr, val)
	case exists:
		return bad("given twice (write KEY[]=VALUE for an array)")
	default:
		m[last] = val
	}
	return nil
}
