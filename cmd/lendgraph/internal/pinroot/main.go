// Command pinroot pins the SDK version that the command line tool's module
// requires to a commit of this repository, so that
//
//	go install github.com/lendgraph/lendgraph-go/cmd/lendgraph@latest
//
// builds the tool against an SDK it compiles with. Inside the checkout,
// go.work builds the tool against the SDK next to it; outside, the go
// command reads cmd/lendgraph/go.mod, which must name a real SDK commit,
// and cmd/lendgraph/go.sum, which must hold that commit's hashes.
//
// Run from the repository root after committing SDK changes the tool needs:
//
//	go run ./cmd/lendgraph/internal/pinroot          # pin to HEAD
//	go run ./cmd/lendgraph/internal/pinroot -check   # CI: verify the pin
//
// Pinning rewrites the require line of cmd/lendgraph/go.mod, the SDK's two
// lines of cmd/lendgraph/go.sum and the replace line of go.work. -check
// recomputes the pinned commit's hashes and builds the tool against that
// commit's SDK in a temporary worktree.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

const sdk = "github.com/lendgraph/lendgraph-go"

func main() {
	rev := flag.String("rev", "HEAD", "the commit to pin")
	check := flag.Bool("check", false, "verify the current pin instead of changing it")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("pinroot: ")
	if *check {
		if err := verify(); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := pin(*rev); err != nil {
		log.Fatal(err)
	}
}

// pin points the tool's module at the SDK of commit rev.
func pin(rev string) error {
	full, err := git("rev-parse", rev+"^{commit}")
	if err != nil {
		return err
	}
	v, err := pseudoVersion(full)
	if err != nil {
		return err
	}
	sums, err := hashes(full, v)
	if err != nil {
		return err
	}
	if err := setRequire(v); err != nil {
		return err
	}
	if err := setSums(sums); err != nil {
		return err
	}
	if err := setWorkReplace(v); err != nil {
		return err
	}
	fmt.Printf("cmd/lendgraph now requires %s %s\n", sdk, v)
	return nil
}

// verify checks that the pinned version names a commit here, that go.sum
// holds its hashes, and that go install of the tool at HEAD works against
// that SDK.
func verify() error {
	v, err := pinned()
	if err != nil {
		return err
	}
	short := v[strings.LastIndex(v, "-")+1:]
	full, err := git("rev-parse", short+"^{commit}")
	if err != nil {
		return fmt.Errorf("the pinned %s names no commit of this repository: %w", v, err)
	}
	if want, err := pseudoVersion(full); err != nil || want != v {
		return fmt.Errorf("the pinned %s is not the pseudo-version of %s (%s, %v)", v, full, want, err)
	}
	sums, err := hashes(full, v)
	if err != nil {
		return err
	}
	have, err := os.ReadFile("cmd/lendgraph/go.sum")
	if err != nil {
		return err
	}
	for _, l := range sums {
		if !bytes.Contains(have, []byte(l+"\n")) {
			return fmt.Errorf("cmd/lendgraph/go.sum lacks %q: run go run ./cmd/lendgraph/internal/pinroot -rev %s", l, short)
		}
	}
	// Install the tool as a user would, from a module proxy that serves
	// this repository's commits (the tool at HEAD, the SDK at the pin) and
	// forwards everything else to the usual proxy.
	tmp, err := os.MkdirTemp("", "pinroot-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	proxy := filepath.Join(tmp, "proxy")
	if err := serveCommit(proxy, sdk, full, v, ""); err != nil {
		return err
	}
	head, err := git("rev-parse", "HEAD")
	if err != nil {
		return err
	}
	tool, err := pseudoVersion(head)
	if err != nil {
		return err
	}
	if err := serveCommit(proxy, sdk+"/cmd/lendgraph", head, tool, "cmd/lendgraph"); err != nil {
		return err
	}
	upstream, err := exec.Command("go", "env", "GOPROXY").Output()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "install", sdk+"/cmd/lendgraph@latest")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOBIN="+filepath.Join(tmp, "bin"),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+","+strings.TrimSpace(string(upstream)),
		"GONOSUMDB="+sdk, "GOPRIVATE=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go install %s/cmd/lendgraph@latest fails against the pinned SDK %s; pin a newer commit with go run ./cmd/lendgraph/internal/pinroot:\n%s", sdk, v, out)
	}
	fmt.Printf("ok: go install %s/cmd/lendgraph@latest (%s) builds against %s %s\n", sdk, tool, sdk, v)
	return nil
}

// serveCommit writes module path at version v, from commit rev's directory
// sub, into a file-based module proxy rooted at dir.
func serveCommit(dir, path, rev, v, sub string) error {
	esc, err := module.EscapePath(path)
	if err != nil {
		return err
	}
	at := filepath.Join(dir, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	top, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	z, err := os.Create(filepath.Join(at, v+".zip"))
	if err != nil {
		return err
	}
	defer z.Close()
	if err := modzip.CreateFromVCS(z, module.Version{Path: path, Version: v}, top, rev, sub); err != nil {
		return fmt.Errorf("zipping %s at %s: %w", path, rev, err)
	}
	gomod, err := git("show", rev+":"+strings.TrimPrefix(sub+"/go.mod", "/"))
	if err != nil {
		return err
	}
	ts, err := git("show", "-s", "--format=%cI", rev)
	if err != nil {
		return err
	}
	files := map[string]string{
		v + ".mod":  gomod + "\n",
		v + ".info": fmt.Sprintf(`{"Version":%q,"Time":%q}`, v, ts),
		"list":      v + "\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(at, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func pseudoVersion(full string) (string, error) {
	ts, err := git("show", "-s", "--format=%ct", full)
	if err != nil {
		return "", err
	}
	var sec int64
	if _, err := fmt.Sscan(ts, &sec); err != nil {
		return "", err
	}
	return module.PseudoVersion("v0", "", time.Unix(sec, 0).UTC(), full[:12]), nil
}

// hashes returns the two go.sum lines of the SDK at commit full.
func hashes(full, v string) ([]string, error) {
	tmp, err := os.CreateTemp("", "pinroot-*.zip")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	top, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		return nil, err
	}
	if err := modzip.CreateFromVCS(tmp, module.Version{Path: sdk, Version: v}, top, full, ""); err != nil {
		return nil, fmt.Errorf("zipping the SDK at %s: %w", full, err)
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	zh, err := dirhash.HashZip(tmp.Name(), dirhash.Hash1)
	if err != nil {
		return nil, err
	}
	gomod, err := git("show", full+":go.mod")
	if err != nil {
		return nil, err
	}
	mh, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(gomod + "\n")), nil
	})
	if err != nil {
		return nil, err
	}
	return []string{sdk + " " + v + " " + zh, sdk + " " + v + "/go.mod " + mh}, nil
}

func pinned() (string, error) {
	b, err := os.ReadFile("cmd/lendgraph/go.mod")
	if err != nil {
		return "", err
	}
	f, err := modfile.Parse("go.mod", b, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == sdk {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("cmd/lendgraph/go.mod does not require %s", sdk)
}

func setRequire(v string) error {
	b, err := os.ReadFile("cmd/lendgraph/go.mod")
	if err != nil {
		return err
	}
	f, err := modfile.Parse("go.mod", b, nil)
	if err != nil {
		return err
	}
	if err := f.AddRequire(sdk, v); err != nil {
		return err
	}
	out, err := f.Format()
	if err != nil {
		return err
	}
	return os.WriteFile("cmd/lendgraph/go.mod", out, 0o644)
}

func setSums(lines []string) error {
	b, err := os.ReadFile("cmd/lendgraph/go.sum")
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var keep []string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if l != "" && !strings.HasPrefix(l, sdk+" ") {
			keep = append(keep, l)
		}
	}
	keep = append(keep, lines...)
	return os.WriteFile("cmd/lendgraph/go.sum", []byte(strings.Join(keep, "\n")+"\n"), 0o644)
}

var workReplace = regexp.MustCompile(`(?m)^replace ` + regexp.QuoteMeta(sdk) + ` \S+ => \./$`)

func setWorkReplace(v string) error {
	b, err := os.ReadFile("go.work")
	if err != nil {
		return err
	}
	line := "replace " + sdk + " " + v + " => ./"
	if !workReplace.Match(b) {
		return fmt.Errorf("go.work has no line %q to update", "replace "+sdk+" <version> => ./")
	}
	return os.WriteFile("go.work", workReplace.ReplaceAll(b, []byte(line)), 0o644)
}

func git(args ...string) (string, error) {
	out, err := exec.Command("git", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}
