package lendgraph_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// TestMisuse_SaysWhatToDo (item 9): a zero Client, nil readers, nil jobs
// and nil contexts give an *InvalidArgumentError naming the fix, before
// any request, never a nil-pointer panic.
func TestMisuse_SaysWhatToDo(t *testing.T) {
	ctx := context.Background()
	var zero lendgraph.Client
	var nilClient *lendgraph.Client
	for _, c := range []*lendgraph.Client{&zero, nilClient} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			s := fmt.Sprintf(verb, c)
			if strings.Contains(s, "PANIC") || !strings.Contains(s, "NewClient") && !(c == nil && s == "<nil>") {
				t.Errorf("Printf(%s) of a client not made by NewClient: %q", verb, s)
			}
		}
		if c.BaseURL() != "" {
			t.Errorf("BaseURL of a zero client: %q", c.BaseURL())
		}
		wantFix(t, "Do on a zero client", c.Do(ctx, http.MethodGet, "/v1/agents", nil, nil), "lendgraph.NewClient")
	}
	if s := fmt.Sprint(zero); strings.Contains(s, "PANIC") {
		t.Errorf("a zero Client by value prints %q", s)
	}

	for _, f := range allFormats {
		wantFix(t, "DecodeRows(nil, "+string(f)+")", firstErr(lendgraph.DecodeRows[lendgraph.Agent](nil, f)), "pass the file's reader")
	}
	wantFix(t, "DecodeEnrichmentResults(nil)", firstErr(lendgraph.DecodeEnrichmentResults(nil)), "pass the file's reader")
	_, err := (&lendgraph.EnrichBatch{Jobs: []*lendgraph.EnrichJob{nil}}).Wait(ctx)
	wantFix(t, "EnrichBatch with a nil job", err, "Jobs[0]")
}

// TestMisuse_NilContext calls every method of every service that takes
// a context with a nil one (and plausible other arguments): each returns
// (or yields) an *InvalidArgumentError, sends nothing, never panics.
func TestMisuse_NilContext(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(50))
	c := srv.Client()
	job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 5})
	ejob := c.Properties.EnrichJob("ejob_1")
	pager, _ := c.Agents.Pager(nil)
	targets := map[string]any{"Pager": pager, "DeliveryJob": job, "EnrichJob": ejob,
		"SearchTokenSource": c.Search.TokenSource(), "SearchHost": c.Search.Host(),
		"EnrichBatch": &lendgraph.EnrichBatch{Jobs: []*lendgraph.EnrichJob{ejob}}}
	cv := reflect.ValueOf(c).Elem()
	for i := range cv.NumField() {
		if f := cv.Type().Field(i); f.IsExported() && f.Type.Kind() == reflect.Pointer {
			targets[f.Name] = cv.Field(i).Interface()
		}
	}
	srv.ResetRequests()
	ctxType := reflect.TypeFor[context.Context]()
	errType := reflect.TypeFor[error]()
	checked := 0
	for name, target := range targets {
		v := reflect.ValueOf(target)
		for m := range v.NumMethod() {
			method := v.Method(m)
			mt := method.Type()
			if mt.NumIn() == 0 || mt.In(0) != ctxType {
				continue
			}
			call := name + "." + v.Type().Method(m).Name
			args := []reflect.Value{reflect.Zero(ctxType)}
			for a := 1; a < mt.NumIn(); a++ {
				if mt.IsVariadic() && a == mt.NumIn()-1 {
					break
				}
				args = append(args, plausible(mt.In(a)))
			}
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s(nil, ...) panicked: %v", call, p)
					}
				}()
				for _, out := range method.Call(args) {
					switch {
					case out.Type() == errType:
						if !out.IsNil() {
							err = out.Interface().(error)
						}
					case out.Kind() == reflect.Func && out.Type().NumIn() == 1: // iter.Seq2
						err = firstErrOf(out)
					}
				}
			}()
			var ia *lendgraph.InvalidArgumentError
			if !errors.As(err, &ia) {
				t.Errorf("%s(nil, ...): %v; want an *InvalidArgumentError", call, err)
			}
			checked++
		}
	}
	t.Logf("%d methods checked", checked)
	if checked < 60 {
		t.Fatalf("only %d methods checked", checked)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent with a nil context", n)
	}
}

// wantFix checks that err is an *InvalidArgumentError whose text names
// what to pass instead.
func wantFix(t *testing.T, what string, err error, fix string) {
	t.Helper()
	var ia *lendgraph.InvalidArgumentError
	if !errors.As(err, &ia) || !strings.Contains(err.Error(), fix) {
		t.Errorf("%s: %v; want an *InvalidArgumentError saying %q", what, err, fix)
	}
}

// plausible returns an argument of type t that passes most validation.
func plausible(t reflect.Type) reflect.Value {
	switch t.Kind() {
	case reflect.String:
		return reflect.ValueOf("1000001").Convert(t)
	case reflect.Int, reflect.Int64, reflect.Int32:
		return reflect.ValueOf(1).Convert(t)
	case reflect.Slice:
		s := reflect.MakeSlice(t, 1, 1)
		s.Index(0).Set(plausible(t.Elem()))
		return s
	case reflect.Pointer:
		return reflect.New(t.Elem())
	case reflect.Map:
		return reflect.MakeMap(t)
	}
	return reflect.Zero(t)
}

// firstErrOf ranges an iter.Seq2 held in a reflect.Value and returns the
// first error it yields.
func firstErrOf(seq reflect.Value) error {
	var err error
	yt := seq.Type().In(0)
	yield := reflect.MakeFunc(yt, func(args []reflect.Value) []reflect.Value {
		if e := args[1]; !e.IsNil() {
			err = e.Interface().(error)
			return []reflect.Value{reflect.ValueOf(false)}
		}
		return []reflect.Value{reflect.ValueOf(true)}
	})
	seq.Call([]reflect.Value{yield})
	return err
}
