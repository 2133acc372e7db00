package lendgraphtest

import (
	"fmt"
	"path"
	"strings"
)

// routePattern is a compiled path pattern of InjectFault and CountRequests.
//
// The syntax is path.Match's (`*` within one segment, `?`, `[a-z]`),
// plus the route wildcards the docs and net/http.ServeMux use: a segment
// `{name}` matches any one segment, and a last segment `{name...}` matches
// the rest of the path (anything after the slash, empty included). The
// empty pattern matches every path.
type routePattern struct {
	raw  string
	glob string // path.Match pattern of the fixed part; "" with rest: any
	rest bool   // a trailing {name...}: glob matches a prefix of segments
	any  bool   // the empty pattern
	wild []int  // segments that are {name}: never empty
}

// compileRoute checks a pattern and compiles it. A pattern that can never
// match a request path is an error that says what to write instead.
func compileRoute(pattern string) (routePattern, error) {
	rp := routePattern{raw: pattern}
	if pattern == "" {
		rp.any = true
		return rp, nil
	}
	if m, p, ok := strings.Cut(pattern, " "); ok && isMethod(m) {
		return rp, fmt.Errorf("pattern %q starts with a method: pass %q as the method and %q as the pattern", pattern, m, strings.TrimSpace(p))
	}
	if strings.Contains(pattern, "://") {
		return rp, fmt.Errorf("pattern %q is a URL: patterns match the path only, e.g. %q", pattern, "/v1/agents/{id}")
	}
	if !strings.HasPrefix(pattern, "/") {
		return rp, fmt.Errorf("pattern %q does not start with /: request paths always do, e.g. %q", pattern, "/"+pattern)
	}
	segs := strings.Split(pattern[1:], "/")
	for i, seg := range segs {
		open, close := strings.Count(seg, "{"), strings.Count(seg, "}")
		if open == 0 && close == 0 {
			continue
		}
		name, isWild := strings.CutPrefix(seg, "{")
		name, closed := strings.CutSuffix(name, "}")
		if !isWild || !closed || open != 1 || close != 1 {
			return rp, fmt.Errorf("pattern %q: segment %q: a wildcard must be a whole segment, {name} or {name...}", pattern, seg)
		}
		if name == "$" {
			if i != len(segs)-1 {
				return rp, fmt.Errorf("pattern %q: {$} may only end the pattern", pattern)
			}
			segs = segs[:i:i]
			segs = append(segs, "") // "/a/{$}" matches "/a/" exactly
			break
		}
		base, rest := strings.CutSuffix(name, "...")
		if base == "" || strings.ContainsAny(base, "*?[]\\ ") {
			return rp, fmt.Errorf("pattern %q: wildcard %q needs a name, e.g. {id}", pattern, seg)
		}
		if rest {
			if i != len(segs)-1 {
				return rp, fmt.Errorf("pattern %q: %s may only be the last segment", pattern, seg)
			}
			rp.rest = true
			segs = segs[:i]
			break
		}
		segs[i] = "*"
		rp.wild = append(rp.wild, i)
	}
	rp.glob = "/" + strings.Join(segs, "/")
	if rp.rest && len(segs) == 0 {
		rp.glob = ""
	}
	if _, err := path.Match(rp.glob, ""); err != nil {
		return rp, fmt.Errorf("pattern %q is not valid path.Match syntax: %v", pattern, err)
	}
	return rp, nil
}

// match reports whether the request path p matches.
func (rp routePattern) match(p string) bool {
	switch {
	case rp.any:
		return true
	case !rp.rest:
		ok, _ := path.Match(rp.glob, p)
		return ok && rp.wildNonEmpty(p)
	case rp.glob == "":
		return strings.HasPrefix(p, "/")
	}
	// The fixed part must match as many leading segments as it has,
	// followed by a slash and anything.
	n := strings.Count(rp.glob, "/")
	k, idx := 0, 0
	for k < n+1 {
		j := strings.IndexByte(p[idx:], '/')
		if j < 0 {
			return false
		}
		idx += j + 1
		k++
	}
	ok, _ := path.Match(rp.glob, p[:idx-1])
	return ok && rp.wildNonEmpty(p)
}

// wildNonEmpty reports whether every {name} segment of p is non-empty, as
// in net/http.ServeMux ("/v1/agents/{id}" does not match "/v1/agents/").
func (rp routePattern) wildNonEmpty(p string) bool {
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for _, i := range rp.wild {
		if i >= len(segs) || segs[i] == "" {
			return false
		}
	}
	return true
}

// isMethod reports whether m looks like an HTTP method (upper-case token).
func isMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, r := range m {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}

// checkMethod refuses a method that no request carries (methods are
// upper case on the wire); empty means any.
func checkMethod(m string) error {
	if m == "" || isMethod(m) {
		return nil
	}
	return fmt.Errorf("method %q never matches: request methods are upper case, e.g. %q (empty for any)", m, strings.ToUpper(m))
}

// mustRoute compiles a method and pattern for a test helper, panicking
// with a message that says what to change: a pattern that can never match
// would otherwise make a fault silently never fire.
func mustRoute(helper, method, pattern string) routePattern {
	if err := checkMethod(method); err != nil {
		panic("lendgraphtest: " + helper + ": " + err.Error())
	}
	rp, err := compileRoute(pattern)
	if err != nil {
		panic("lendgraphtest: " + helper + ": " + err.Error())
	}
	return rp
}
