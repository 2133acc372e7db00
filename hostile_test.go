package lendgraph_test

// A hostile or broken server: each test starts a loopback server of its
// own (not lendgraphtest) that answers the way a broken proxy, a
// misconfigured gateway or a hostile host would, and checks the SDK's
// answer through the public surface. The byte-heavy cases live in
// hostile_heavy_test.go, out of -race runs. RELIABILITY.md ("Hostile
// server") lists every case with its figure: go test -run TestHostile -v .

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// tenYears is a Retry-After of ten years, in seconds.
const tenYears = "315360000"

// within runs fn and fails the test when it took longer than limit.
func within(t *testing.T, limit time.Duration, what string, fn func()) time.Duration {
	t.Helper()
	start := time.Now()
	fn()
	d := time.Since(start)
	if d > limit {
		t.Errorf("%s took %v, want at most %v", what, d, limit)
	}
	return d
}

// --- 1. server-requested waits: one cap ---

// A plain call whose 429 or 503 asks for ten years fails at once with a
// *RateLimitError carrying the server's value; nothing is retried.
func TestHostile_TenYearRetryAfterFailsAtOnce(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			api := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", tenYears)
				w.WriteHeader(status)
				fmt.Fprint(w, `{"error":"come back later"}`)
			})
			c := hostileClient(t, api)
			var err error
			d := within(t, time.Second, "the call", func() { _, err = c.Agents.Get(context.Background(), "agt_1") })
			var rl *lendgraph.RateLimitError
			if !errors.As(err, &rl) || rl.RetryAfter != 10*365*24*time.Hour || rl.StatusCode != status {
				t.Fatalf("err = %v, want *RateLimitError (status %d) with RetryAfter of ten years", err, status)
			}
			if !errors.Is(err, lendgraph.ErrRateLimited) || (status == 503 && !errors.Is(err, lendgraph.ErrUnavailable)) {
				t.Fatalf("err = %v does not match its sentinels", err)
			}
			if !strings.Contains(err.Error(), "WithMaxServerWait") {
				t.Fatalf("the error does not say why the client did not wait: %v", err)
			}
			if n := api.total(); n != 1 {
				t.Fatalf("%d attempts, want 1", n)
			}
			t.Logf("%d Retry-After ten years: *RateLimitError after %v, 1 attempt", status, d)
		})
	}
}

// WithMaxServerWait moves the cap: a wait at the cap is slept through, one
// above it returns at once.
func TestHostile_MaxServerWaitOption(t *testing.T) {
	for _, tc := range []struct {
		retryAfter string
		waits      bool
	}{{"1", true}, {"2", false}} {
		t.Run("Retry-After "+tc.retryAfter, func(t *testing.T) {
			var n atomic.Int32
			api := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					w.Header().Set("Retry-After", tc.retryAfter)
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				fmt.Fprint(w, `{"id":"agt_1"}`)
			})
			c := hostileClient(t, api, lendgraph.WithMaxServerWait(time.Second))
			start := time.Now()
			_, err := c.Agents.Get(context.Background(), "agt_1")
			d := time.Since(start)
			var rl *lendgraph.RateLimitError
			switch {
			case tc.waits && (err != nil || d < 900*time.Millisecond):
				t.Fatalf("Retry-After at the cap: err %v after %v, want success after about 1s", err, d)
			case !tc.waits && (!errors.As(err, &rl) || d > 500*time.Millisecond || n.Load() != 1):
				t.Fatalf("Retry-After above the cap: err %v after %v and %d attempts, want *RateLimitError at once", err, d, n.Load())
			}
		})
	}
	if _, err := lendgraph.NewClient(lendgraph.WithAPIKey("k"), lendgraph.WithMaxServerWait(-time.Second)); err == nil {
		t.Fatal("a negative WithMaxServerWait was accepted")
	}
}

// Both job kinds' Wait: a status poll answered 429 with a ten-year
// Retry-After returns the *RateLimitError at once instead of sleeping until
// the context ends.
func TestHostile_WaitDoesNotSleepTenYears(t *testing.T) {
	api := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", tenYears)
		w.WriteHeader(http.StatusTooManyRequests)
	})
	c := hostileClient(t, api)
	for name, wait := range map[string]func(context.Context) error{
		"enrichment": func(ctx context.Context) error { _, err := c.Properties.EnrichJob("job_1").Wait(ctx); return err },
		"delivery":   func(ctx context.Context) error { _, err := c.Agents.DeliveryJob("dlv_1").Wait(ctx); return err },
	} {
		t.Run(name, func(t *testing.T) {
			before := api.total()
			// A deadline only so that a regression fails instead of hanging.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var err error
			d := within(t, time.Second, "Wait", func() { err = wait(ctx) })
			var rl *lendgraph.RateLimitError
			if !errors.As(err, &rl) || rl.RetryAfter != 10*365*24*time.Hour {
				t.Fatalf("err = %v, want *RateLimitError with RetryAfter of ten years", err)
			}
			if n := api.total() - before; n != 1 {
				t.Fatalf("%d polls, want 1", n)
			}
			t.Logf("%s Wait, poll 429 Retry-After ten years: *RateLimitError after %v, 1 poll", name, d)
		})
	}
}

// A storage host answering a signed-link download 429 with a ten-year
// Retry-After: the download ends at once with the *RateLimitError inside its
// *DownloadError, instead of five rounds of retries.
func TestHostile_DownloadTenYearRetryAfter(t *testing.T) {
	storage := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", tenYears)
		w.WriteHeader(http.StatusTooManyRequests)
	})
	api := linkAPI(t, false, func() string { return storage.URL + "/f?X-Signature=0123456789abcdef" })
	c := hostileClient(t, api) // default retries and backoff
	for name, dl := range downloads(c) {
		t.Run(name, func(t *testing.T) {
			before := storage.total()
			var err error
			d := within(t, time.Second, name, func() { _, err = dl(context.Background()) })
			var rl *lendgraph.RateLimitError
			var de *lendgraph.DownloadError
			if !errors.As(err, &rl) || !errors.As(err, &de) || rl.RetryAfter != 10*365*24*time.Hour {
				t.Fatalf("err = %v, want a *DownloadError holding a *RateLimitError", err)
			}
			if n := storage.total() - before; n != 1 {
				t.Fatalf("%d requests to the storage host, want 1", n)
			}
			t.Logf("%s, storage 429 Retry-After ten years: %v after %v", name, err, d)
		})
	}
}

// --- 2. market movement's retryAfterMs ---

func TestHostile_MostGainedRetryAfterMsBounds(t *testing.T) {
	const limit = 300 * time.Millisecond
	maxDuration := time.Duration(math.MaxInt64)
	for _, tc := range []struct {
		name      string
		ms        string
		reported  time.Duration // the wait WithProgress sees; 0: no wait
		refusedAs time.Duration // RetryAfter of the *RateLimitError; 0: success
	}{
		{"negative", "-5", limit, 0}, // no usable value: a second, or the cap when shorter
		{"zero", "0", limit, 0},
		{"cap-1ms", "299", limit - time.Millisecond, 0},
		{"cap", "300", limit, 0},
		{"cap+1ms", "301", 0, limit + time.Millisecond},
		{"1e15", "1000000000000000", 0, maxDuration},
		{"MaxInt64", strconv.FormatInt(math.MaxInt64, 10), 0, maxDuration},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			api := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					w.WriteHeader(http.StatusAccepted)
					fmt.Fprintf(w, `{"status":"computing","retryAfterMs":%s}`, tc.ms)
					return
				}
				fmt.Fprint(w, `{"data":[{"companyName":"A","gained":3}],"truncated":false,"window":{"months":12}}`)
			})
			c := hostileClient(t, api, lendgraph.WithMaxServerWait(limit))
			var reported []time.Duration
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			mv, err := c.Market.MostGained(ctx, &lendgraph.MostGainedRequest{DateRange: "last_12_months"},
				lendgraph.WithProgress(func(p *lendgraph.MovementProgress) { reported = append(reported, p.RetryAfter) }))
			d := time.Since(start)
			if tc.refusedAs == 0 {
				if err != nil || len(mv.Data) != 1 || len(reported) != 1 || reported[0] != tc.reported || d < tc.reported-10*time.Millisecond {
					t.Fatalf("err %v, reported %v, took %v; want rows after one wait of %v", err, reported, d, tc.reported)
				}
				return
			}
			var rl *lendgraph.RateLimitError
			if !errors.As(err, &rl) || rl.RetryAfter != tc.refusedAs || !errors.Is(err, lendgraph.ErrRateLimited) {
				t.Fatalf("err = %v, want *RateLimitError with RetryAfter %v", err, tc.refusedAs)
			}
			if len(reported) != 0 || n.Load() != 1 || d > 200*time.Millisecond {
				t.Fatalf("reported %v, %d requests, took %v: want no wait at all", reported, n.Load(), d)
			}
		})
	}
	t.Run("default cap", func(t *testing.T) {
		t.Parallel()
		api := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, `{"status":"computing","retryAfterMs":1000000000000000}`)
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		d := within(t, time.Second, "MostGained", func() {
			_, err = hostileClient(t, api).Market.MostGained(ctx, &lendgraph.MostGainedRequest{DateRange: "last_12_months"})
		})
		var rl *lendgraph.RateLimitError
		if !errors.As(err, &rl) || rl.RetryAfter != maxDuration {
			t.Fatalf("err = %v, want *RateLimitError", err)
		}
		t.Logf("202 retryAfterMs 1e15: *RateLimitError (RetryAfter %v) after %v", rl.RetryAfter, d)
	})
}

// --- 3 and 4. links: http(s) only, no downgrade ---

// linkAPI serves a completed delivery job and a completed enrichment job
// whose results link is link().
func linkAPI(t *testing.T, tls bool, link func() string) *recorder {
	return newRecorder(t, tls, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/agents/bulk-delivery/"):
			fmt.Fprintf(w, `{"jobId":"dlv_1","status":"completed","format":"ndjson","resultsUrl":%q}`, link())
		case strings.HasPrefix(r.URL.Path, "/v1/properties/enrich-bulk/"):
			fmt.Fprintf(w, `{"jobId":"job_1","status":"completed","resultsUrl":%q}`, link())
		default:
			http.NotFound(w, r)
		}
	})
}

// downloads are the SDK calls that follow a results link.
func downloads(c *lendgraph.Client) map[string]func(context.Context) (int64, error) {
	return map[string]func(context.Context) (int64, error){
		"delivery Download": func(ctx context.Context) (int64, error) {
			return c.Agents.DeliveryJob("dlv_1").Download(ctx, new(bytes.Buffer))
		},
		"delivery Rows": func(ctx context.Context) (int64, error) {
			n := int64(0)
			for _, err := range c.Agents.DeliveryJob("dlv_1").Rows(ctx) {
				if err != nil {
					return n, err
				}
				n++
			}
			return n, nil
		},
		"enrichment Download": func(ctx context.Context) (int64, error) {
			return c.Properties.EnrichJob("job_1").Download(ctx, new(bytes.Buffer))
		},
	}
}

// A results link that is not http(s) is a permanent error at once, naming
// the scheme (it was retried for about ten seconds).
func TestHostile_LinkSchemeRefusedAtOnce(t *testing.T) {
	for _, link := range []string{"file:///etc/passwd", "ftp://127.0.0.1/results.ndjson.gz", "javascript:alert(1)", "/relative/results"} {
		api := linkAPI(t, false, func() string { return link })
		c := hostileClient(t, api) // default retries and backoff
		for name, dl := range downloads(c) {
			t.Run(link+"/"+name, func(t *testing.T) {
				var err error
				d := within(t, time.Second, name, func() { _, err = dl(context.Background()) })
				scheme, _, _ := strings.Cut(link, ":")
				if link[0] == '/' {
					scheme = "no scheme"
				}
				if !errors.Is(err, lendgraph.ErrUnsafeLink) || !strings.Contains(err.Error(), scheme) {
					t.Fatalf("err = %v, want ErrUnsafeLink naming %q", err, scheme)
				}
				if strings.Contains(link, "alert") && strings.Contains(err.Error(), "alert") {
					t.Fatalf("the error quotes the link: %v", err)
				}
				t.Logf("%s: %v after %v", name, err, d)
			})
		}
	}
}

// With an https API an http:// link is refused before anything is sent;
// an http API (a loopback fake) or WithInsecureHTTPLinks allows it.
func TestHostile_HTTPLinkUnderHTTPSAPI(t *testing.T) {
	file := []byte("{\"id\":\"agt_1\"}\n")
	storage := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(file)))
		w.Write(file)
	})
	link := func() string { return storage.URL + "/results?X-Signature=0123456789abcdef0123456789abcdef" }
	secureAPI := linkAPI(t, true, link)
	plainAPI := linkAPI(t, false, link)
	for _, tc := range []struct {
		name   string
		api    *recorder
		opts   []lendgraph.Option
		refuse bool
	}{
		{"https API", secureAPI, nil, true},
		{"https API, WithInsecureHTTPLinks", secureAPI, []lendgraph.Option{lendgraph.WithInsecureHTTPLinks()}, false},
		{"http API", plainAPI, nil, false},
	} {
		c := hostileClient(t, tc.api, tc.opts...)
		for name, dl := range downloads(c) {
			if name == "delivery Rows" {
				continue // the file is not gzipped; Download is enough here
			}
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				before := storage.total()
				_, err := dl(context.Background())
				if !tc.refuse {
					if err != nil {
						t.Fatal(err)
					}
					return
				}
				if !errors.Is(err, lendgraph.ErrUnsafeLink) || !strings.Contains(err.Error(), "http") {
					t.Fatalf("err = %v, want ErrUnsafeLink", err)
				}
				if strings.Contains(err.Error(), "0123456789abcdef") {
					t.Fatalf("the error holds the signature: %v", err)
				}
				if n := storage.total() - before; n != 0 {
					t.Fatalf("the http storage host got %d requests", n)
				}
				t.Logf("%v", err)
			})
		}
	}
	// The search host a token names follows the same rule.
	search := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"hits":[],"query":"jo","limit":20,"offset":0,"estimatedTotalHits":0}`)
	})
	tokenAPI := newRecorder(t, true, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"token":"tok_0123456789abcdef","host":%q,"indexes":["agents"],"expiresAt":%q}`,
			search.URL, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	})
	_, err := hostileClient(t, tokenAPI).Search.Host().Search(context.Background(), lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
	if !errors.Is(err, lendgraph.ErrUnsafeLink) || search.total() != 0 {
		t.Fatalf("http search host under an https API: err %v, %d requests", err, search.total())
	}
	if _, err := hostileClient(t, tokenAPI, lendgraph.WithInsecureHTTPLinks()).Search.Host().Search(context.Background(),
		lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"}); err != nil {
		t.Fatalf("WithInsecureHTTPLinks: %v", err)
	}
}

// --- 5. no key, token or signature in an error from headers or URLs ---

// --- regressions that hold and must keep holding ---

// A captive portal's HTML page, a 204 and a status 999 give typed errors;
// 999 is not a 5xx and is not retried.
func TestHostile_OddAnswersAreTyped(t *testing.T) {
	for _, tc := range []struct {
		name     string
		h        http.HandlerFunc
		attempts int
		check    func(error) bool
	}{
		{"captive portal HTML 200", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>Sign in to the hotel Wi-Fi</body></html>")
		}, 1, func(err error) bool {
			var de *lendgraph.DecodeError
			return errors.As(err, &de) && de.StatusCode == 200 && de.ContentType == "text/html"
		}},
		{"204", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }, -1, func(err error) bool {
			var de *lendgraph.DecodeError
			return errors.As(err, &de) && de.StatusCode == 204
		}},
		{"999", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(999)
			fmt.Fprint(w, "odd")
		}, 1, func(err error) bool {
			var ae *lendgraph.APIError
			return errors.As(err, &ae) && ae.StatusCode == 999
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newRecorder(t, false, tc.h)
			_, err := hostileClient(t, api, lendgraph.WithRetryBackoff(time.Millisecond, time.Millisecond)).Agents.Get(context.Background(), "agt_1")
			if !tc.check(err) {
				t.Fatalf("err = %#v", err)
			}
			if tc.attempts > 0 && api.total() != tc.attempts {
				t.Fatalf("%d attempts, want %d", api.total(), tc.attempts)
			}
		})
	}
}

// 100,000 levels of nesting and 1e400 in an integer field are refused with
// a *DecodeError, never clamped or decoded.
func TestHostile_NestingAndHugeNumbers(t *testing.T) {
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	for name, body := range map[string]string{
		"nesting in a known field":    `{"data":` + deep + `,"total":1}`,
		"nesting in an unknown field": `{"id":"agt_1","x":` + deep + `}`,
		"1e400 in an integer field":   `{"id":"agt_1","transactionCount":1e400}`,
		"1e19 in an integer field":    `{"id":"agt_1","transactionCount":10000000000000000000}`,
		"1.5 in an integer field":     `{"id":"agt_1","transactionCount":1.5}`,
	} {
		t.Run(name, func(t *testing.T) {
			api := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) })
			c := hostileClient(t, api)
			var err error
			if strings.HasPrefix(body, `{"data"`) {
				_, err = c.Agents.List(context.Background(), nil)
			} else {
				var a *lendgraph.Agent
				a, err = c.Agents.Get(context.Background(), "agt_1")
				if err == nil {
					t.Fatalf("decoded as %+v", a)
				}
			}
			var de *lendgraph.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want *DecodeError", err)
			}
		})
	}
}

// A cursor that comes back ends the iteration with an error instead of
// looping.
func TestHostile_CursorCycleStops(t *testing.T) {
	next := map[string]string{"": "c1", "c1": "c2", "c2": "c1"}
	api := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Pagination struct{ Cursor string } `json:"pagination"`
		}
		_ = jsonDecode(r, &body)
		fmt.Fprintf(w, `{"data":[{"id":"agt_%s"}],"total":9,"cursor":%q}`, body.Pagination.Cursor, next[body.Pagination.Cursor])
	})
	n := 0
	var last error
	for _, err := range hostileClient(t, api).Agents.All(context.Background(), nil) {
		if err != nil {
			last = err
			break
		}
		n++
	}
	if last == nil || !strings.Contains(last.Error(), "second time") || api.total() > 4 {
		t.Fatalf("%d rows, %d requests, err %v: want an error about the repeated cursor", n, api.total(), last)
	}
	t.Logf("cursor cycle: %d rows, %d requests, then %v", n, api.total(), last)
}

// A job that was completed and then reports running again is an error, not
// a download of whatever the link now holds.
func TestHostile_JobGoesBackToRunning(t *testing.T) {
	storage := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden) // the link expired: the SDK fetches the status again
	})
	var polls atomic.Int32
	api := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		if polls.Add(1) == 1 {
			fmt.Fprintf(w, `{"jobId":"j","status":"completed","format":"ndjson","bytes":10,"resultsUrl":%q}`, storage.URL+"/f")
			return
		}
		fmt.Fprint(w, `{"jobId":"j","status":"running","format":"ndjson"}`)
	})
	c := hostileClient(t, api, lendgraph.WithRetryBackoff(time.Millisecond, time.Millisecond))
	for name, dl := range map[string]func() error{
		"delivery": func() error {
			_, err := c.Agents.DeliveryJob("j").Download(context.Background(), new(bytes.Buffer))
			return err
		},
		"enrichment": func() error {
			_, err := c.Properties.EnrichJob("j").Download(context.Background(), new(bytes.Buffer))
			return err
		},
	} {
		polls.Store(0)
		err := dl()
		if err == nil || !strings.Contains(err.Error(), "running") {
			t.Fatalf("%s: err = %v, want an error saying the job is running again", name, err)
		}
	}
}

func jsonDecode(r *http.Request, v any) error { return json.NewDecoder(r.Body).Decode(v) }
