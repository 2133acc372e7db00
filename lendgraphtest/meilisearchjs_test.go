package lendgraphtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOfficialJSClient runs the official Meilisearch JavaScript client (npm
// meilisearch, pinned in testdata/meilisearch-js/package-lock.json) against
// the fake search host: every search parameter the host implements,
// multi-search, token scoping, token expiry and a wrong token. It installs
// the package itself into a cache directory ($LENDGRAPH_NPM_CACHE, else the
// user cache directory) and skips only when node or npm is missing.
func TestOfficialJSClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not running the Meilisearch JavaScript client")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the official Meilisearch JavaScript client check needs Node.js 20.19+ and npm")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: the official Meilisearch JavaScript client check needs Node.js 20.19+ and npm")
	}
	dir := installNPM(t, npm, "testdata/meilisearch-js")

	srv := NewServer(t, WithDefaultRows(2000))
	c := srv.Client()
	mux := http.NewServeMux()
	mux.Handle("GET /search-token", c.Search.TokenHandler())
	mux.HandleFunc("GET /short-token", func(w http.ResponseWriter, r *http.Request) {
		exp := srv.Now().Add(2 * time.Second)
		writeJSON(w, http.StatusOK, map[string]any{"token": srv.NewSearchToken(2 * time.Second), "host": srv.SearchHostURL(),
			"indexes": searchIndexNames, "expiresAt": exp.UTC().Format(time.RFC3339Nano)})
	})
	app := httptest.NewServer(mux)
	defer app.Close()
	cfg, _ := json.Marshal(map[string]string{
		"tokenURL":       app.URL + "/search-token",
		"shortTokenURL":  app.URL + "/short-token",
		"companiesToken": srv.NewSearchToken(time.Hour, "companies"),
	})

	script, err := os.ReadFile("testdata/meilisearch-js/client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	// The script runs from the install directory, where its import of
	// "meilisearch" resolves; a name of its own keeps parallel runs apart.
	f, err := os.CreateTemp(dir, "client-*.mjs")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(script); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, f.Name())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LG_CONFIG="+string(cfg))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", filepath.Base(f.Name()), err, out)
	}
	if !strings.Contains(string(out), "passed 16 checks") {
		t.Fatalf("the script did not run every check:\n%s", out)
	}
	t.Logf("%s", out)
}

// installNPM installs the packages locked in src (package.json and
// package-lock.json) with npm ci into a cache directory named after the
// lock file's hash, once, and returns that directory.
func installNPM(t *testing.T, npm, src string) string {
	t.Helper()
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	root := os.Getenv("LENDGRAPH_NPM_CACHE")
	if root == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		root = filepath.Join(base, "lendgraph-go", "npm")
	}
	sum := sha256.Sum256(append(manifest, lock...))
	dir := filepath.Join(root, filepath.Base(src)+"-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
		return dir
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(root, ".install-*")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for name, b := range map[string][]byte{"package.json": manifest, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", tmp, err, out)
	}
	// Another run may have finished first: its copy is as good as ours.
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); serr != nil {
			t.Fatalf("installing into %s: %v", dir, err)
		}
	}
	return dir
}
