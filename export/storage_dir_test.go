package export_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// TestDirFilesHaveTheDatasetsMode: every file of an export directory (the
// plan, claims, records, data files, manifest, _SUCCESS, the lock file)
// has the mode a file created 0644 gets under the umask (0644 under the
// default 022, 0640 under 027), so another user's reader can read them
// all; a data file is readable by its owner alone (0600) while it is
// written. (The manifest, plan and _SUCCESS were once 0600, the data
// files 0644.)
func TestDirFilesHaveTheDatasetsMode(t *testing.T) {
	for _, tc := range []struct {
		umask int
		want  fs.FileMode
	}{{0o022, 0o644}, {0o027, 0o640}} {
		for _, f := range []lendgraph.Format{lendgraph.FormatCSV, lendgraph.FormatParquet} {
			t.Run(string(f)+"/"+tc.want.String(), func(t *testing.T) {
				old := syscall.Umask(tc.umask)
				defer syscall.Umask(old)
				srv, c := fakeFor(t, 900, 0)
				p := planAgents(t, srv, c, f, "state")
				// The first file comes down slowly: it is seen while written.
				srv.InjectFault("GET", "/objects/{key...}", lendgraphtest.Fault{Kind: lendgraphtest.Throttle, Rate: 1 << 10, Times: 1})
				dir := t.TempDir()
				var mu sync.Mutex
				partial := map[string]fs.FileMode{}
				o := runOpts()
				o.OnEvent = func(e export.Event) {
					if e.Kind != export.EventDownloading {
						return
					}
					tmps, _ := filepath.Glob(filepath.Join(dir, filepath.FromSlash(e.Shard), ".part-*.tmp"))
					for _, tmp := range tmps {
						if fi, err := os.Stat(tmp); err == nil {
							mu.Lock()
							partial[tmp] = fi.Mode().Perm()
							mu.Unlock()
						}
					}
				}
				if _, err := export.Run(context.Background(), c.Agents, p, openDest(t, dir), o); err != nil {
					t.Fatal(err)
				}
				seen := map[string]bool{}
				err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
					if err != nil || e.IsDir() {
						return err
					}
					fi, err := e.Info()
					if err != nil {
						return err
					}
					rel, _ := filepath.Rel(dir, path)
					seen[strings.SplitN(filepath.ToSlash(rel), "/", 2)[0]] = true
					if fi.Mode().Perm() != tc.want {
						t.Errorf("%s is %v; want %v", rel, fi.Mode().Perm(), tc.want)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				for _, name := range []string{export.PlanFile, export.ManifestFile, export.SuccessFile, "_claims", "_shards", ".locks", "state=CA"} {
					if !seen[name] {
						t.Errorf("no %s in the export directory", name)
					}
				}
				if len(partial) == 0 {
					t.Error("no data file was seen while it was written")
				}
				for name, mode := range partial {
					if mode != 0o600 {
						t.Errorf("%s was %v while it was written; want 0600", name, mode)
					}
				}
			})
		}
	}
}

// TestDirFollowsNoPlantedLink plants a symbolic link at every name of an
// export directory someone who can write into it could predict (the data
// files, the shard downloads an older version wrote, the plan, claims,
// records, manifest, _SUCCESS, the lock file, the partition directories),
// pointing at a file (or directory) of the victim's outside it, before the
// run and between a shard's submit and its download. Whatever the run
// makes of it (it may refuse a name it cannot use), the victim is
// unchanged and nothing is written outside the directory.
func TestDirFollowsNoPlantedLink(t *testing.T) {
	srv, c := fakeFor(t, 200, 0)
	p := planAgents(t, srv, c, lendgraph.FormatCSV, "state")
	sh := p.Shards[0]
	files := []string{
		sh.File, sh.Name + "/.part-00000.csv.download", sh.Name + "/.part-00000.csv.download.part", sh.Name + "/.part-00000.csv.download.part.meta",
		export.PlanFile, export.ManifestFile, export.SuccessFile, "_claims/00000.json", "_shards/00000.json", "_shards/00000.ids",
		".locks/shards.lock",
	}
	dirs := []string{sh.Name, "_claims", "_shards", ".locks"}
	type plant struct{ name, target string }
	var cases []plant
	for _, f := range files {
		cases = append(cases, plant{f, "file"})
	}
	for _, d := range dirs {
		cases = append(cases, plant{d, "dir"})
	}
	cases = append(cases, plant{"", "between submit and download"})
	for _, tc := range cases {
		t.Run(tc.name+" "+tc.target, func(t *testing.T) {
			victims := t.TempDir()
			victim := filepath.Join(victims, "victim.txt")
			writeFile(t, victim, "the victim's own bytes\n")
			victimDir := filepath.Join(victims, "dir")
			mustDo(t, os.Mkdir(victimDir, 0o755))
			dir := t.TempDir()
			link := func(name, target string) {
				path := filepath.Join(dir, filepath.FromSlash(name))
				mustDo(t, os.MkdirAll(filepath.Dir(path), 0o755))
				_ = os.Remove(path)
				mustDo(t, os.Symlink(target, path))
			}
			o := runOpts()
			switch tc.target {
			case "file":
				link(tc.name, victim)
			case "dir":
				link(tc.name, victimDir)
			default:
				// Planted once the shard is submitted: at its file's name,
				// the names an older version downloaded to, its record.
				o.OnEvent = func(e export.Event) {
					if e.Kind == export.EventSubmitted {
						for _, n := range []string{"/part-00000.csv", "/.part-00000.csv.download.part", "/.part-00000.csv.download.part.meta"} {
							link(e.Shard+n, victim)
						}
						link(shardFile(p, e.Shard, ".json"), victim)
						link(shardFile(p, e.Shard, ".ids"), victim)
					}
				}
			}
			res, err := export.Run(context.Background(), c.Agents, p, openDest(t, dir), o)
			if got := readFile(t, victim); got != "the victim's own bytes\n" {
				t.Errorf("the victim holds %q", got)
			}
			if entries, _ := os.ReadDir(victimDir); len(entries) != 0 {
				t.Errorf("written into the victim's directory: %v", entries)
			}
			if tc.target == "between submit and download" && (err != nil || !res.Complete) {
				t.Errorf("links planted after the submits: %+v, %v", res, err)
			}
		})
	}
}
