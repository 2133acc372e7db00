package export

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ManifestFile and SuccessFile are the names of the manifest and of the
// completion marker in an export directory.
const (
	ManifestFile = "_manifest.json"
	SuccessFile  = "_SUCCESS"
)

// locksDir holds the lock files of an export directory (hidden from
// DuckDB's globs and from Spark, which skip names starting with a dot).
const locksDir = ".locks"

// ShardState is where a shard stands.
type ShardState string

// Shard states. Only pending, failed and cancelled shards are submitted;
// a submitted shard is re-attached to its job; a landed one is skipped
// while its file is intact, and downloaded again from its job (no new job,
// no new charge) when it is not.
const (
	// StatePending: never submitted.
	StatePending ShardState = "pending"
	// StateSubmitting: the intent to submit is recorded but the answer is
	// not (a crash or an unknown outcome): the service may hold a job for
	// the shard. A later run submits it again only with
	// RunOptions.ResubmitUncertain, and then marks it Uncertain.
	StateSubmitting ShardState = "submitting"
	// StateSubmitted: the job id is recorded; the file is not landed.
	StateSubmitted ShardState = "submitted"
	// StateLanded: the file is in place, decodes, and holds the rows the
	// job delivered.
	StateLanded ShardState = "landed"
	// StateFailed: the job failed (no charge), or the service refused the
	// submit, or lost the job.
	StateFailed ShardState = "failed"
	// StateCancelled: the job was cancelled (no charge).
	StateCancelled ShardState = "cancelled"
)

// Manifest is the record of an export directory: the plan and where each
// shard stands. It is rewritten atomically (a temporary file, fsync,
// rename, fsync of the directory) after every change.
type Manifest struct {
	Version int           `json:"version"`
	Plan    *Plan         `json:"plan"`
	Shards  []ShardStatus `json:"shards"`
	// Verification is the last check of the whole dataset, made when
	// every shard had landed.
	Verification *Verification `json:"verification,omitempty"`
	UpdatedAt    time.Time     `json:"updatedAt"`
}

// ShardStatus is one shard's entry in the manifest.
type ShardStatus struct {
	Name  string     `json:"name"`
	State ShardState `json:"state"`
	// File is the landed file, relative to the export directory.
	File string `json:"file"`
	// JobID is the shard's delivery job, once submitted.
	JobID string `json:"jobId,omitempty"`
	// Submits counts the submits recorded for the shard.
	Submits int `json:"submits,omitempty"`
	// Uncertain marks a shard submitted again after a submit whose answer
	// was never recorded: the service may hold one more job for it, which
	// is charged when it completes.
	Uncertain bool `json:"uncertain,omitempty"`
	// Unanswered counts the submits whose answer was lost and that a
	// later submit followed (RunOptions.ResubmitUncertain); a shard still
	// StateSubmitting has one more.
	Unanswered int `json:"unanswered,omitempty"`
	// Rows are the rows decoded from the landed file.
	Rows int64 `json:"rows,omitempty"`
	// Processed, ChargedCount, CreditsCharged and CreditLedgerID are the
	// job's, as its last status record said.
	Processed      int64    `json:"processed,omitempty"`
	ChargedCount   *int64   `json:"chargedCount,omitempty"`
	CreditsCharged *float64 `json:"creditsCharged,omitempty"`
	CreditLedgerID string   `json:"creditLedgerId,omitempty"`
	// Bytes and SHA256 describe the landed file.
	Bytes  int64  `json:"bytes,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// ETag is the landed object's, in a bucket: Commit checks the object
	// against its record by size and ETag, without reading it.
	ETag string `json:"etag,omitempty"`
	// IDs is the digest of the landed file's ids, in a bucket.
	IDs *IDDigest `json:"ids,omitempty"`
	// Error is the last problem, empty once landed.
	Error       string    `json:"error,omitempty"`
	SubmittedAt time.Time `json:"submittedAt,omitzero"`
	LandedAt    time.Time `json:"landedAt,omitzero"`
}

// lostRows are the rows that s's submits whose answer was lost may have
// had charged: the shard's planned rows for each.
func (p *Plan) lostRows(s *ShardStatus) int64 {
	sh, ok := p.Shard(s.Name)
	if !ok {
		return 0
	}
	return int64(s.lost()) * sh.Rows
}

// lost is the number of the shard's submits whose answer was lost: each
// may have started a job that nobody can find, charged when it completes.
func (s *ShardStatus) lost() int {
	n := s.Unanswered
	if n == 0 && s.Uncertain {
		n = 1 // a manifest written before Unanswered
	}
	if s.State == StateSubmitting {
		n++
	}
	return n
}

// Verification is the check of a whole dataset.
type Verification struct {
	// Complete is true when every shard landed, every file matched its
	// record and no id appeared twice: _SUCCESS was written.
	Complete bool `json:"complete"`
	Files    int  `json:"files"`
	// PlannedRows is the query's total when planned; LandedRows the rows
	// in the files. They differ when the data changed meanwhile (or
	// entitlement row filters hold some rows back).
	PlannedRows int64 `json:"plannedRows"`
	LandedRows  int64 `json:"landedRows"`
	// DuplicateIDs counts the ids found in more than one row.
	DuplicateIDs int64       `json:"duplicateIds"`
	Duplicates   []Duplicate `json:"duplicates,omitempty"`
	// ChargedRows and CreditsCharged add up the shards' jobs.
	// UncertainRows are the rows that submits whose answer was lost may
	// have had charged on top (a shard's planned rows for each): the
	// shards submitted again with ResubmitUncertain.
	ChargedRows    int64     `json:"chargedRows"`
	UncertainRows  int64     `json:"uncertainRows,omitempty"`
	CreditsCharged float64   `json:"creditsCharged"`
	VerifiedAt     time.Time `json:"verifiedAt"`
}

// ReadManifest reads the manifest of an export directory. A directory
// that does not exist, or holds no manifest, is an error that matches
// fs.ErrNotExist.
func ReadManifest(dir string) (*Manifest, error) {
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	if m == nil {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("export: reading the export directory: %w", err)
		}
		return nil, fmt.Errorf("export: %s holds no %s: not an export directory (%w)", dir, ManifestFile, fs.ErrNotExist)
	}
	return m, nil
}

// readManifest reads the manifest, nil when there is none.
func readManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("export: %s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if m.Plan == nil {
		return nil, fmt.Errorf("export: %s holds no plan", filepath.Join(dir, ManifestFile))
	}
	if err := m.Plan.check(); err != nil {
		return nil, fmt.Errorf("export: %s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return &m, nil
}

// Status returns the entry of the shard called name.
func (m *Manifest) Status(name string) (*ShardStatus, bool) {
	for i := range m.Shards {
		if m.Shards[i].Name == name {
			return &m.Shards[i], true
		}
	}
	return nil, false
}

// store keeps the manifest of one run. Several processes may run shards
// of one export into the same directory (a workflow with one task a
// shard): a process works on a shard only while it holds the shard's lock
// (claim), and every write takes the directory's manifest lock and merges,
// keeping this run's entries for the shards it holds and the entries on
// disk for the others.
type store struct {
	dir   string
	mu    sync.Mutex
	m     *Manifest
	owned map[string]func() // shards held: their unlock
	// disk is the manifest file as this run last read or wrote it: while
	// the file is the same (same inode, size and modification time; every
	// writer renames a new file into place), nobody else has written and
	// a merge has nothing to read. Without it every update re-reads and
	// decodes the whole manifest, quadratic in the shards.
	disk os.FileInfo
}

// openStore opens (or creates) the manifest of dir for plan. A manifest of
// another plan is a *PlanMismatchError.
func openStore(dir string, plan *Plan) (*store, error) {
	if err := os.MkdirAll(filepath.Join(dir, locksDir), 0o755); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	s := &store{dir: dir, owned: map[string]func(){}}
	unlock, err := lockFile(filepath.Join(dir, locksDir, "manifest.lock"), true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	removeStaleTemps(dir)
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	if m != nil {
		if m.Plan.fingerprint() != plan.fingerprint() {
			return nil, &PlanMismatchError{Dir: dir, Want: m.Plan.describe(), Got: plan.describe()}
		}
		s.m = m
		s.disk = s.stat()
		return s, nil
	}
	s.m = &Manifest{Version: PlanVersion, Plan: plan}
	for _, sh := range plan.Shards {
		s.m.Shards = append(s.m.Shards, ShardStatus{Name: sh.Name, State: StatePending, File: sh.File})
	}
	return s, s.writeLocked()
}

// removeStaleTemps removes temporary manifests a crash left behind (the
// caller holds the manifest lock, so nobody is writing one).
func removeStaleTemps(dir string) {
	tmps, _ := filepath.Glob(filepath.Join(dir, "."+ManifestFile+".tmp-*"))
	for _, t := range tmps {
		_ = os.Remove(t)
	}
}

// claim takes a shard's lock without waiting: false when another process
// works on it. Its entry is then refreshed from disk and becomes this
// run's until release.
func (s *store) claim(name string) (bool, error) {
	unlock, err := lockFile(shardLockName(s.dir, name), false)
	if errors.Is(err, errLocked) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := s.refresh(); err != nil {
		unlock()
		return false, err
	}
	s.mu.Lock()
	s.owned[name] = unlock
	s.mu.Unlock()
	return true, nil
}

// release gives a claimed shard back.
func (s *store) release(name string) {
	s.mu.Lock()
	unlock := s.owned[name]
	delete(s.owned, name)
	s.mu.Unlock()
	if unlock != nil {
		unlock()
	}
}

// get returns a copy of a shard's entry.
func (s *store) get(name string) ShardStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, _ := s.m.Status(name)
	return *st
}

// snapshot returns a copy of the manifest as this run sees it.
func (s *store) snapshot() Manifest {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := *s.m
	m.Shards = append([]ShardStatus(nil), s.m.Shards...)
	return m
}

// update changes a shard's entry and writes the manifest.
func (s *store) update(name string, fn func(*ShardStatus)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, _ := s.m.Status(name)
	fn(st)
	return s.flushLocked(nil)
}

// verified records the check of the whole dataset and writes the manifest.
func (s *store) verified(v *Verification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushLocked(v)
}

// refresh merges the entries other processes wrote (the shards this run
// does not work on) without writing.
func (s *store) refresh() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := lockFile(filepath.Join(s.dir, locksDir, "manifest.lock"), true)
	if err != nil {
		return err
	}
	defer unlock()
	return s.mergeLocked()
}

func (s *store) mergeLocked() error {
	now := s.stat()
	if now != nil && s.disk != nil && os.SameFile(now, s.disk) && now.Size() == s.disk.Size() && now.ModTime().Equal(s.disk.ModTime()) {
		return nil
	}
	disk, err := readManifest(s.dir)
	if err != nil || disk == nil {
		return err
	}
	s.disk = now
	onDisk := make(map[string]*ShardStatus, len(disk.Shards))
	for i := range disk.Shards {
		onDisk[disk.Shards[i].Name] = &disk.Shards[i]
	}
	for i := range s.m.Shards {
		if _, held := s.owned[s.m.Shards[i].Name]; held {
			continue
		}
		if d, ok := onDisk[s.m.Shards[i].Name]; ok {
			s.m.Shards[i] = *d
		}
	}
	s.m.Verification = disk.Verification
	return nil
}

// stat is the manifest file's FileInfo, nil when it cannot be had (a
// merge then reads the file).
func (s *store) stat() os.FileInfo {
	fi, err := os.Stat(filepath.Join(s.dir, ManifestFile))
	if err != nil {
		return nil
	}
	return fi
}

// flushLocked merges and writes the manifest under the directory's lock;
// v, when set, replaces the verification.
func (s *store) flushLocked(v *Verification) error {
	unlock, err := lockFile(filepath.Join(s.dir, locksDir, "manifest.lock"), true)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.mergeLocked(); err != nil {
		return err
	}
	if v != nil {
		s.m.Verification = v
	}
	return s.writeLocked()
}

func (s *store) writeLocked() error {
	s.m.UpdatedAt = time.Now().UTC()
	b, err := json.MarshalIndent(s.m, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(s.dir, ManifestFile), append(b, '\n')); err != nil {
		return fmt.Errorf("export: writing the manifest: %w", err)
	}
	s.disk = s.stat()
	return nil
}

// writeAtomic writes data to name so that a reader (or a crash) sees the
// old file or the new one, never a mix: a temporary file in the same
// directory, fsync, rename, fsync of the directory.
func writeAtomic(name string, data []byte) (err error) {
	dir := filepath.Dir(name)
	f, err := os.CreateTemp(dir, "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), name); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir durable. Systems that cannot sync a
// directory (Windows) have nothing to do.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) && !isUnsupported(err) {
		return err
	}
	return nil
}

func isUnsupported(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(strings.ToLower(pe.Err.Error()), "not supported")
}

// shardLockName is the lock file of a shard: one per shard, so two
// processes never work on the same shard at once.
func shardLockName(dir, shard string) string {
	h := sha256.Sum256([]byte(shard))
	return filepath.Join(dir, locksDir, "shard-"+hex.EncodeToString(h[:8])+".lock")
}
