// Command release prepares a release of every module of this repository
// at once, and checks that a release of the current commit would install.
//
// The SDK is the root module; export, otel, parquet, searchhost and the
// command line tool (cmd/lendgraph) are modules of their own, released
// together under one version. Inside the checkout go.work builds them all
// against each other; outside, each nested module's go.mod names the
// version of its siblings it needs. The library modules also replace
// their siblings with the directories next to them (ignored by their
// consumers), so day-to-day changes need no pin; the command line tool
// cannot (go install refuses a main module with replace directives), so
// its go.mod and go.sum name real versions, which this command writes.
//
// From the repository root, on a clean checkout:
//
//	go run ./internal/tools/release -version v1.2.0   # prepare the release, print the tags
//	go run ./internal/tools/release -check            # CI: the current commit would release
//
// -version rewrites every nested module's requirements on its siblings to
// the version, brings cmd/lendgraph's go.mod and go.sum up to date against
// the modules of this checkout at that version (served from a local module
// proxy: nothing is published), and prints the commit to make and the tags
// to create. -check does the same in a copy of HEAD with a version no
// release uses, then installs cmd/lendgraph with GOWORK=off from that
// proxy, as `go install .../cmd/lendgraph@latest` will once the tags are
// pushed, and builds a module that imports every library package.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

// root is the SDK's module path; every module of the repository is under it.
const root = "github.com/lendgraph/lendgraph-go"

// released are the directories of the modules a release tags, the root
// first. Every other module of go.work (examples, test-only and tool
// modules) must be in unreleased, so that a new module is a decision.
var (
	released   = []string{".", "export", "otel", "parquet", "searchhost", "cmd/lendgraph"}
	unreleased = []string{"otel/test", "examples/temporal", "examples/browser-search", "internal/tools/release", "internal/tools/apilist"}
)

// cli is the directory of the module that has no replace directives.
const cli = "cmd/lendgraph"

// checkVersion is the version -check releases at: a prerelease no real
// release uses.
const checkVersion = "v0.0.0-releasecheck"

func main() {
	version := flag.String("version", "", "the version to release (vX.Y.Z)")
	check := flag.Bool("check", false, "check that the current commit would release and install, changing nothing")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("release: ")
	var err error
	switch {
	case *check && *version == "":
		err = runCheck()
	case !*check && *version != "":
		err = runRelease(*version)
	default:
		err = errors.New("pass -version vX.Y.Z to prepare a release, or -check")
	}
	if err != nil {
		log.Fatal(err)
	}
}

// runRelease prepares a release at version in the checkout.
func runRelease(version string) error {
	if !semver.IsValid(version) || semver.Canonical(version) != version || semver.Build(version) != "" {
		return fmt.Errorf("-version %q is not a release version: write vMAJOR.MINOR.PATCH (a -prerelease may follow)", version)
	}
	if semver.Major(version) != "v0" && semver.Major(version) != "v1" {
		return fmt.Errorf("-version %s needs the module paths to end in /%s first", version, semver.Major(version))
	}
	top, err := git(".", "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	if dirty, err := git(top, "status", "--porcelain"); err != nil || dirty != "" {
		return fmt.Errorf("commit or stash your changes first (the release is made from HEAD):\n%s%v", dirty, errOrEmpty(err))
	}
	w, err := prepare(top, version)
	if err != nil {
		return err
	}
	defer os.RemoveAll(w.tmp)
	// The copy's go.mod and go.sum files are the release's: bring them here.
	for _, m := range w.mods {
		for _, name := range []string{"go.mod", "go.sum"} {
			b, err := os.ReadFile(filepath.Join(w.tree, m.dir, name))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(top, m.dir, name), b, 0o644); err != nil {
				return err
			}
		}
	}
	fmt.Printf("Every nested module now requires its siblings at %s, and %s/go.sum holds their hashes.\n", version, cli)
	fmt.Printf("Check, commit and tag:\n\n\tgo run ./internal/tools/release -check\n\tgit commit -am 'Release %s'\n", version)
	for _, dir := range released {
		fmt.Printf("\tgit tag %s\n", tag(dir, version))
	}
	fmt.Printf("\tgit push origin")
	for _, dir := range released {
		fmt.Printf(" %s", tag(dir, version))
	}
	fmt.Println()
	return nil
}

// runCheck prepares a release of HEAD in a copy, and installs the command
// line tool and builds every library package from it with GOWORK=off.
func runCheck() error {
	top, err := git(".", "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	w, err := prepare(top, checkVersion)
	if err != nil {
		return err
	}
	defer os.RemoveAll(w.tmp)
	if err := w.serve(cli); err != nil {
		return err
	}
	env := w.env("GOBIN=" + filepath.Join(w.tmp, "bin"))
	scratch := filepath.Join(w.tmp, "scratch")
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return err
	}
	if out, err := run(scratch, env, "go", "install", root+"/"+cli+"@"+checkVersion); err != nil {
		return fmt.Errorf("go install %s/%s@%s fails from this commit's modules:\n%s", root, cli, checkVersion, out)
	}
	fmt.Printf("ok: go install %s/%s@%s builds, GOWORK=off, from this commit's modules\n", root, cli, checkVersion)
	// A consumer of every library module.
	var imports, requires strings.Builder
	for _, m := range w.mods {
		if m.dir == cli || !slices.Contains(released, m.dir) {
			continue
		}
		fmt.Fprintf(&imports, "\t_ %q\n", m.path)
		fmt.Fprintf(&requires, "require %s %s\n", m.path, checkVersion)
	}
	files := map[string]string{
		"go.mod":  "module example.com/consumer\n\ngo 1.25.0\n\n" + requires.String(),
		"main.go": "package main\n\nimport (\n" + imports.String() + ")\n\nfunc main() {}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(scratch, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	tidyEnv := append(env, "GOFLAGS=-mod=mod")
	if out, err := run(scratch, tidyEnv, "go", "mod", "tidy"); err != nil {
		return fmt.Errorf("a module importing every library package cannot be tidied from this commit's modules:\n%s", out)
	}
	if out, err := run(scratch, tidyEnv, "go", "build", "./..."); err != nil {
		return fmt.Errorf("a module importing every library package does not build from this commit's modules:\n%s", out)
	}
	fmt.Printf("ok: a module importing every library package (%d modules) builds, GOWORK=off, from this commit's modules\n", len(released)-1)
	return nil
}

// mod is a module of the repository: its directory ("." for the root) and
// its path.
type mod struct{ dir, path string }

// work is a release being prepared in a copy of HEAD.
type work struct {
	tmp, tree, proxy string
	version          string
	mods             []mod
	env              func(extra ...string) []string
}

// prepare copies HEAD into a temporary directory, rewrites every nested
// module's requirements on its siblings to version there, serves the
// released library modules from a local module proxy, and brings the
// command line tool's go.mod and go.sum up to date against it.
func prepare(top, version string) (*work, error) {
	tmp, err := os.MkdirTemp("", "lendgraph-release-")
	if err != nil {
		return nil, err
	}
	w := &work{tmp: tmp, tree: filepath.Join(tmp, "tree"), proxy: filepath.Join(tmp, "proxy"), version: version}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	if err := extractHEAD(top, w.tree); err != nil {
		return nil, err
	}
	if w.mods, err = modules(w.tree); err != nil {
		return nil, err
	}
	upstream, err := exec.Command("go", "env", "GOPROXY").Output()
	if err != nil {
		return nil, err
	}
	w.env = func(extra ...string) []string {
		// GODEBUG=goindex=0: the go command indexes the packages of a
		// module cache directory once, by its path, taking it to be
		// immutable; forget replaces what a directory of this version
		// holds, so an index of an earlier run's copy would hide new
		// packages ("does not contain package").
		env := append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GONOSUMDB="+root, "GOPRIVATE=", "GONOPROXY=", "GODEBUG=goindex=0",
			"GOPROXY=file://"+filepath.ToSlash(w.proxy)+","+strings.TrimSpace(string(upstream)))
		return append(env, extra...)
	}
	paths := map[string]bool{}
	for _, m := range w.mods {
		if slices.Contains(released, m.dir) {
			paths[m.path] = true
			if err := forget(m.path, version); err != nil {
				return nil, err
			}
		}
	}
	for _, m := range w.mods {
		if m.dir == "." {
			continue
		}
		if err := setSiblings(filepath.Join(w.tree, m.dir, "go.mod"), paths, version); err != nil {
			return nil, err
		}
	}
	for _, dir := range released {
		if dir != cli {
			if err := w.serve(dir); err != nil {
				return nil, err
			}
		}
	}
	if out, err := run(filepath.Join(w.tree, cli), w.env("GOFLAGS=-mod=mod"), "go", "mod", "tidy"); err != nil {
		return nil, fmt.Errorf("go mod tidy in %s against this commit's modules at %s:\n%s", cli, version, out)
	}
	ok = true
	return w, nil
}

// modules lists the modules of go.work, the root first, and checks that
// each is either released or known not to be.
func modules(tree string) ([]mod, error) {
	b, err := os.ReadFile(filepath.Join(tree, "go.work"))
	if err != nil {
		return nil, err
	}
	wf, err := modfile.ParseWork("go.work", b, nil)
	if err != nil {
		return nil, err
	}
	var mods []mod
	for _, u := range wf.Use {
		dir := path.Clean(u.Path)
		if !slices.Contains(released, dir) && !slices.Contains(unreleased, dir) {
			return nil, fmt.Errorf("go.work uses %s, which internal/tools/release lists neither as released nor as unreleased: add it to one", dir)
		}
		gm, err := os.ReadFile(filepath.Join(tree, dir, "go.mod"))
		if err != nil {
			return nil, err
		}
		p := modfile.ModulePath(gm)
		if want := path.Join(root, dir); p != want {
			return nil, fmt.Errorf("%s/go.mod is module %q, want %q (a module's path is its directory under %s)", dir, p, want, root)
		}
		mods = append(mods, mod{dir: dir, path: p})
	}
	for _, dir := range released {
		if !slices.ContainsFunc(mods, func(m mod) bool { return m.dir == dir }) {
			return nil, fmt.Errorf("go.work does not use %s, a released module", dir)
		}
	}
	slices.SortStableFunc(mods, func(a, b mod) int { return boolInt(b.dir == ".") - boolInt(a.dir == ".") })
	return mods, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// setSiblings rewrites the requirements of a go.mod on the released
// modules to version.
func setSiblings(gomod string, released map[string]bool, version string) error {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return err
	}
	f, err := modfile.Parse(gomod, b, nil)
	if err != nil {
		return err
	}
	for _, r := range f.Require {
		if released[r.Mod.Path] {
			if err := f.AddRequire(r.Mod.Path, version); err != nil {
				return err
			}
		}
	}
	f.Cleanup()
	out, err := f.Format()
	if err != nil {
		return err
	}
	return os.WriteFile(gomod, out, 0o644)
}

// forget removes module path at version from the module cache, where an
// earlier run (a -check, a release prepared and abandoned) may have left
// other contents under the same version, which the go command would use
// instead of the local proxy's.
func forget(p, version string) error {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return err
	}
	cache := strings.TrimSpace(string(out))
	esc, err := module.EscapePath(p)
	if err != nil {
		return err
	}
	ev, err := module.EscapeVersion(version)
	if err != nil {
		return err
	}
	extracted := filepath.Join(cache, filepath.FromSlash(esc)+"@"+ev)
	// The go command makes what it extracts read-only.
	_ = filepath.WalkDir(extracted, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	if err := os.RemoveAll(extracted); err != nil {
		return err
	}
	downloads, _ := filepath.Glob(filepath.Join(cache, "cache", "download", filepath.FromSlash(esc), "@v", ev+".*"))
	for _, f := range downloads {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	return nil
}

// serve zips the module in dir of the copy into the local proxy at the
// release's version.
func (w *work) serve(dir string) error {
	p := root
	if dir != "." {
		p = root + "/" + dir
	}
	esc, err := module.EscapePath(p)
	if err != nil {
		return err
	}
	at := filepath.Join(w.proxy, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	z, err := os.Create(filepath.Join(at, w.version+".zip"))
	if err != nil {
		return err
	}
	defer z.Close()
	if err := modzip.CreateFromDir(z, module.Version{Path: p, Version: w.version}, filepath.Join(w.tree, dir)); err != nil {
		return fmt.Errorf("zipping %s: %w", p, err)
	}
	gomod, err := os.ReadFile(filepath.Join(w.tree, dir, "go.mod"))
	if err != nil {
		return err
	}
	files := map[string]string{
		w.version + ".mod":  string(gomod),
		w.version + ".info": fmt.Sprintf(`{"Version":%q,"Time":%q}`, w.version, time.Now().UTC().Format(time.RFC3339)),
		"list":              w.version + "\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(at, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// extractHEAD writes the files of commit HEAD into dir, as the tags will
// hold them (no untracked or ignored file of the checkout).
func extractHEAD(top, dir string) error {
	cmd := exec.Command("git", "archive", "--format=tar", "HEAD")
	cmd.Dir = top
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git archive HEAD: %v: %s", err, stderr.Bytes())
	}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, dir+string(filepath.Separator)) {
			return fmt.Errorf("git archive: %s is outside the tree", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(name, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return err
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			if err := os.WriteFile(name, b, os.FileMode(h.Mode)&0o755|0o644); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, name); err != nil {
				return err
			}
		}
	}
}

// tag is the git tag of the module in dir at version.
func tag(dir, version string) string {
	if dir == "." {
		return version
	}
	return dir + "/" + version
}

func run(dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	return cmd.CombinedOutput()
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

func errOrEmpty(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
