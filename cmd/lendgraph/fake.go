package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// fakeFlags are the fake command's settings flags; each overrides the
// same member of --config.
type fakeFlags struct {
	config       string
	rows         []string // N or RESOURCE=N
	seed         int64
	credits      float64
	entitle      []string // RESOURCE=MAXROWS[:COL,COL...]
	jobRate      []string // KIND=ROWS_PER_SECOND
	linkTTL      string
	computeDelay string
	faults       []string // FaultSpec JSON
}

func (a *app) fakeCommand() *cobra.Command {
	var addr string
	var allowRemote bool
	var ff fakeFlags
	cmd := &cobra.Command{
		Use:   "fake",
		Short: "Run the fake LendGraph API as a standalone server",
		Long: `fake runs the fake API (package lendgraphtest) as a server, so test harnesses
in any language can use it. It prints one line to stdout and serves until
interrupted:

  LENDGRAPH_BASE_URL=http://127.0.0.1:PORT LENDGRAPH_API_KEY=lg_test_… LENDGRAPH_SEARCH_HOST=http://127.0.0.1:PORT2 LENDGRAPH_STORAGE_URL=… LENDGRAPH_FAKE_CONTROL_URL=http://127.0.0.1:PORT/_fake LENDGRAPH_FAKE_OTHER_API_KEY=lg_test_…

(space-separated NAME=VALUE pairs whose values hold no spaces or quotes: a
shell reads it with "set -a; . ./fake.env; set +a"; with --json it is one
JSON object). The other key belongs to a second organization.

The dataset (--rows, --seed) is fixed at start. Everything else can also be
changed while it runs through the control endpoint on the same address,
which takes no key: GET /_fake/ lists its routes (settings, credits,
entitlements, the ledger, faults, the request log, jobs, new keys, the
clock). It takes writes only as application/json and only under localhost
or an IP address of the machine, so a web page in a browser beside it
cannot drive it. It listens on loopback: an --addr other machines can reach
(":8080", "0.0.0.0:8080", a LAN address) exposes the fake's keys, data and
control endpoint to them, and is refused unless --allow-remote says so. --config FILE is the same JSON that PATCH /_fake/settings takes:

  {"rows": 30000, "seed": 7, "credits": 5000,
   "entitlements": {"agents": {"maxRows": 2000, "columns": ["id", "fullName", "state"]}},
   "jobRate": {"delivery": 5000}, "linkTtl": "2m", "computeDelay": "0s",
   "faults": [{"method": "POST", "path": "/v1/{resource}", "status": 429, "headers": {"Retry-After": "1"}}]}

Flags override the file.`,
		Example: `  lendgraph fake --addr 127.0.0.1:8080 --rows 100000 --seed 7
  lendgraph fake --rows 30000 --entitle agents=2000 --job-rate delivery=5000
  lendgraph fake --entitle agents=5000:id,fullName,state --credits 500 --link-ttl 1m
  lendgraph fake --fault '{"method":"GET","path":"/v1/agents/{id}","status":503,"times":2}'
  lendgraph fake --config fake.json --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			remote, err := remoteAddr(addr)
			if err != nil {
				return err
			}
			if remote && !allowRemote {
				return usagef("--addr %s: other machines could reach the fake, and its control endpoint takes no key (anyone reaching it can mint keys and arm faults); listen on loopback (--addr 127.0.0.1:%s), or pass --allow-remote", addr, portOf(addr))
			}
			st, err := ff.settings(cmd)
			if err != nil {
				return err
			}
			if remote {
				a.say("warning: --addr %s --allow-remote: the fake's keys, data and control endpoint (no key) are open to every machine that reaches this one", addr)
			}
			srv, err := lendgraphtest.Start(lendgraphtest.WithAddr(addr), lendgraphtest.WithControlEndpoint(), lendgraphtest.WithSettings(st))
			if err != nil {
				if strings.HasPrefix(err.Error(), "settings: ") {
					return usagef("%v", err)
				}
				return err
			}
			defer srv.Close()
			other := srv.NewCaller("org_other")
			def := srv.DefaultCaller()
			if a.jsonOut {
				err = a.writeJSONLine(map[string]any{
					"baseUrl": srv.URL, "storageUrl": srv.StorageURL(), "searchHost": srv.SearchHostURL(), "controlUrl": srv.ControlURL(),
					"keys": []map[string]string{
						{"key": def.Key, "userId": def.UserID, "orgId": def.OrgID},
						{"key": other.Key, "userId": other.UserID, "orgId": other.OrgID},
					},
				})
			} else {
				_, err = fmt.Fprintf(a.stdout, "LENDGRAPH_BASE_URL=%s LENDGRAPH_API_KEY=%s LENDGRAPH_SEARCH_HOST=%s LENDGRAPH_STORAGE_URL=%s LENDGRAPH_FAKE_CONTROL_URL=%s LENDGRAPH_FAKE_OTHER_API_KEY=%s\n",
					srv.URL, def.Key, srv.SearchHostURL(), srv.StorageURL(), srv.ControlURL(), other.Key)
			}
			if err != nil {
				return err
			}
			a.say("fake LendGraph API serving at %s (control: %s/); Ctrl-C to stop", srv.URL, srv.ControlURL())
			<-cmd.Context().Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on (port 0: a free port); loopback unless --allow-remote")
	f.BoolVar(&allowRemote, "allow-remote", false, "let --addr be one other machines can reach (every interface, a LAN address)")
	f.StringVar(&ff.config, "config", "", "read settings from this JSON file (the body of PATCH /_fake/settings, plus rows and seed)")
	f.StringArrayVar(&ff.rows, "rows", nil, "records per resource: N for every resource, RESOURCE=N for one (repeatable; default 10000)")
	f.Int64Var(&ff.seed, "seed", 1, "dataset seed")
	f.Float64Var(&ff.credits, "credits", 10_000_000, "credit balance of every organization")
	f.StringArrayVar(&ff.entitle, "entitle", nil, "grant the default organization bulk-delivery.RESOURCE: RESOURCE=MAXROWS[:COLUMN,COLUMN...] (repeatable)")
	f.StringArrayVar(&ff.jobRate, "job-rate", nil, "job pace, KIND=ROWS_PER_SECOND for enrichment or delivery (repeatable)")
	f.StringVar(&ff.linkTTL, "link-ttl", "", "lifetime of signed download links, e.g. 15m (default 15m)")
	f.StringVar(&ff.computeDelay, "compute-delay", "", "how long a new most-gained query answers 202 computing, e.g. 0s (default 20ms)")
	f.StringArrayVar(&ff.faults, "fault", nil, `arm a fault, as JSON: {"method","path","kind","status","headers","body","delay","rate","times","stream"}; kind is respond (default), drop-before-response, drop-mid-body, stall, trickle or throttle (repeatable)`)
	return cmd
}

// remoteAddr tells whether listening on addr (HOST:PORT) lets other
// machines in: any host but "localhost" and a loopback address, the empty
// host (every interface) included.
func remoteAddr(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, usagef("--addr %q: want HOST:PORT, e.g. 127.0.0.1:8080 (port 0: a free port)", addr)
	}
	if strings.EqualFold(host, "localhost") {
		return false, nil
	}
	ip, err := netip.ParseAddr(host)
	return err != nil || !ip.IsLoopback(), nil
}

// portOf is the port of a HOST:PORT address.
func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// settings reads --config and lays the flags given over it.
func (ff *fakeFlags) settings(cmd *cobra.Command) (lendgraphtest.Settings, error) {
	var st lendgraphtest.Settings
	if ff.config != "" {
		b, err := os.ReadFile(ff.config)
		if err != nil {
			return st, usagef("--config: %v", err)
		}
		if err := decodeStrict(b, &st); err != nil {
			return st, usagef("--config %s: %v", ff.config, err)
		}
	}
	for _, v := range ff.rows {
		res, n, isRes := strings.Cut(v, "=")
		if !isRes {
			n = res
		}
		rows, err := strconv.Atoi(n)
		if err != nil || rows < 0 || !isRes && rows == 0 {
			return st, usagef("--rows %q: want a positive number of records, or RESOURCE=N", v)
		}
		if isRes {
			if st.ResourceRows == nil {
				st.ResourceRows = map[string]int{}
			}
			st.ResourceRows[res] = rows
		} else {
			st.Rows = &rows
		}
	}
	if cmd.Flags().Changed("seed") {
		st.Seed = &ff.seed
	}
	if cmd.Flags().Changed("credits") {
		st.Credits = &ff.credits
	}
	for _, v := range ff.entitle {
		res, spec, ok := strings.Cut(v, "=")
		maxRows, cols, _ := strings.Cut(spec, ":")
		n, err := strconv.ParseInt(maxRows, 10, 64)
		if !ok || res == "" || err != nil {
			return st, usagef("--entitle %q: want RESOURCE=MAXROWS or RESOURCE=MAXROWS:COLUMN,COLUMN (e.g. agents=2000:id,fullName)", v)
		}
		e := &lendgraphtest.Entitlement{MaxRows: n}
		if cols != "" {
			e.Columns = strings.Split(cols, ",")
		}
		if st.Entitlements == nil {
			st.Entitlements = map[string]*lendgraphtest.Entitlement{}
		}
		st.Entitlements[res] = e
	}
	for _, v := range ff.jobRate {
		kind, r, ok := strings.Cut(v, "=")
		rate, err := strconv.ParseFloat(r, 64)
		if !ok || err != nil || rate < 0 {
			return st, usagef("--job-rate %q: want KIND=ROWS_PER_SECOND, e.g. delivery=2000", v)
		}
		if st.JobRate == nil {
			st.JobRate = map[string]float64{}
		}
		st.JobRate[kind] = rate
	}
	if ff.linkTTL != "" {
		st.LinkTTL = ff.linkTTL
	}
	if ff.computeDelay != "" {
		st.ComputeDelay = ff.computeDelay
	}
	for _, v := range ff.faults {
		var f lendgraphtest.FaultSpec
		if err := decodeStrict([]byte(v), &f); err != nil {
			return st, usagef("--fault %s: %v", v, err)
		}
		st.Faults = append(st.Faults, f)
	}
	return st, nil
}

// decodeStrict decodes one JSON value, refusing unknown members (a typo in
// a harness's settings fails loudly instead of being ignored).
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty: want a JSON object")
		}
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}
