package export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// ShardState is where a shard stands.
type ShardState string

// Shard states. Only pending, failed and cancelled shards are submitted;
// a submitted shard is re-attached to its job; a landed one is skipped
// while its file is intact, and landed again from its job (no new job,
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
	// StateLanded: the file is in place, decodes, holds the rows the job
	// delivered and only rows of its partition, and is recorded.
	StateLanded ShardState = "landed"
	// StateFailed: the job failed (no charge), or the service refused the
	// submit, or lost the job.
	StateFailed ShardState = "failed"
	// StateCancelled: the job was cancelled (no charge).
	StateCancelled ShardState = "cancelled"
)

// Manifest is where an export stands: its plan and every shard's state.
// Commit writes it as ManifestFile, with the Verification, before
// SuccessFile; ReadManifest returns it.
type Manifest struct {
	Version int           `json:"version"`
	Plan    *Plan         `json:"plan"`
	Shards  []ShardStatus `json:"shards"`
	// Verification is the check of the whole dataset Commit made; nil
	// for an export not committed.
	Verification *Verification `json:"verification,omitempty"`
	UpdatedAt    time.Time     `json:"updatedAt"`
}

// ShardStatus is one shard's state, as its claim or record in the storage
// says it.
type ShardStatus struct {
	Name  string     `json:"name"`
	State ShardState `json:"state"`
	// File is the landed file, relative to the export's storage.
	File string `json:"file"`
	// Plan identifies the plan the shard was claimed or landed for: a
	// claim or record of another plan is never taken for one of this.
	Plan string `json:"plan,omitempty"`
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
	// against its record by size and ETag, without reading it (a file in
	// a directory, by size and sha256).
	ETag string `json:"etag,omitempty"`
	// IDs is the digest of the landed file's ids.
	IDs *IDDigest `json:"ids,omitempty"`
	// Error is the last problem this run met (it is not stored).
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
		n = 1
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

// Status returns the entry of the shard called name.
func (m *Manifest) Status(name string) (*ShardStatus, bool) {
	for i := range m.Shards {
		if m.Shards[i].Name == name {
			return &m.Shards[i], true
		}
	}
	return nil, false
}

// ReadManifest returns where the export in st stands: once committed
// (SuccessFile there), the manifest Commit wrote, with its Verification;
// otherwise its plan and every shard's state as its claim or record says
// (Verification nil). A storage with no plan is an error matching ErrNoPlan
// and fs.ErrNotExist.
func ReadManifest(ctx context.Context, st *Storage) (*Manifest, error) {
	if err := checkStorage(st); err != nil {
		return nil, err
	}
	plan, err := ReadPlan(ctx, st)
	if err != nil {
		return nil, err
	}
	if _, err := st.b.read(ctx, SuccessFile); err == nil {
		var m Manifest
		if err := readJSON(ctx, st.b, ManifestFile, &m); err != nil {
			return nil, fmt.Errorf("export: reading %s: %w", ManifestFile, err)
		}
		if m.Plan == nil || m.Plan.fingerprint() != plan.fingerprint() {
			return nil, fmt.Errorf("export: %s in %s is of another plan than its %s", ManifestFile, st, PlanFile)
		}
		return &m, nil
	} else if !isNotFound(err) {
		return nil, fmt.Errorf("export: reading %s: %w", SuccessFile, err)
	}
	s := newStateStore(ctx, st, plan)
	if err := s.refresh(); err != nil {
		return nil, err
	}
	m := s.snapshot()
	return &m, nil
}

// errClaimed is a claim another task or process wrote first.
var errClaimed = errors.New("export: another task claimed the shard first")

// stateStore keeps the state of a run's shards in its storage, with no
// lock over the whole: a shard's claim (its ShardStatus while it is
// submitted) is created only when absent, so two runs never both submit it,
// and its record (its ShardStatus once landed) says it is done. In a
// directory, a shard's lock file also tells a live process's claim from a
// dead one's. Every change is written before it is taken in memory: what a
// run reports is what the storage holds.
type stateStore struct {
	b     backend
	ctx   context.Context // the run's, without its cancellation
	plan  *Plan
	fp    string
	index map[string]int

	// targets are the shards a run works on (nil: all): refresh reads
	// only their claims and records, and takes the others' state from the
	// listing, so a task of one shard does not read the whole export.
	targets map[string]bool

	mu      sync.Mutex
	st      map[string]*ShardStatus
	claimed map[string]bool   // a claim or record exists (as last seen or written)
	held    map[string]func() // the locks this run holds: their unlock
	// room holds, for a shard whose intent to submit is written, the
	// room its job id's record needs: a full disk cannot keep a job the
	// service started from being recorded.
	room map[string]reservation
}

func newStateStore(ctx context.Context, st *Storage, plan *Plan) *stateStore {
	s := &stateStore{b: st.b, ctx: context.WithoutCancel(ctx), plan: plan, fp: plan.fingerprint(), index: map[string]int{},
		st: map[string]*ShardStatus{}, claimed: map[string]bool{}, held: map[string]func(){}, room: map[string]reservation{}}
	for i, sh := range plan.Shards {
		s.index[sh.Name] = i
		s.st[sh.Name] = &ShardStatus{Name: sh.Name, State: StatePending, File: sh.File}
	}
	return s
}

// shardKey is the name of a shard's claim or record: its index in the plan,
// so that names stay short and free of the partition values' characters.
func shardKey(dir string, i int, ext string) string {
	return fmt.Sprintf("%s%05d%s", dir, i, ext)
}

// claimRoom is the room taken for a claim's record of its job id: far
// more than a claim's JSON takes.
const claimRoom = 4096

// lockName is a shard's lock file: one per shard, so two processes never
// work on the same shard at once.
func lockName(shard string) string {
	h := sha256.Sum256([]byte(shard))
	return "shard-" + hex.EncodeToString(h[:8])
}

// load reads the shard's record, else its claim: its state as the storage
// says, and whether either exists.
func (s *stateStore) load(name string) (ShardStatus, bool, error) {
	i := s.index[name]
	sh := s.plan.Shards[i]
	var st ShardStatus
	err := readJSON(s.ctx, s.b, shardKey(recordsDir, i, ".json"), &st)
	if err == nil {
		if err := s.mine(&st, sh, "record"); err != nil {
			return st, false, err
		}
		st.State = StateLanded
		return st, true, nil
	}
	if !isNotFound(err) {
		return st, false, fmt.Errorf("export: reading the record of shard %s: %w", name, err)
	}
	err = readJSON(s.ctx, s.b, shardKey(claimsDir, i, ".json"), &st)
	switch {
	case isNotFound(err):
		return ShardStatus{Name: sh.Name, State: StatePending, File: sh.File}, false, nil
	case err != nil:
		return st, false, fmt.Errorf("export: reading the claim of shard %s: %w", name, err)
	}
	if err := s.mine(&st, sh, "claim"); err != nil {
		return st, true, err
	}
	if st.State != StateSubmitting && st.State != StateSubmitted {
		return st, true, fmt.Errorf("export: the claim of shard %s says %q", name, st.State)
	}
	return st, true, nil
}

// mine checks that a claim or record is of this plan's shard.
func (s *stateStore) mine(st *ShardStatus, sh Shard, what string) error {
	if st.Plan != s.fp || st.Name != sh.Name || st.File != sh.File {
		return fmt.Errorf("export: the %s of shard %s is of another plan (%s, plan %s; this plan is %s): the storage holds another export's files; export into another one",
			what, sh.Name, st.Name, st.Plan, s.fp)
	}
	return nil
}

// claim takes the shard for this run and reads its state: false when
// another process holds it (a directory's lock; a bucket has none, and the
// submit's exclusive claim is what keeps two tasks from both submitting).
func (s *stateStore) claim(name string) (bool, error) {
	unlock, ok, err := s.b.lock(s.index[name], lockName(name))
	if err != nil || !ok {
		return false, err
	}
	st, exists, err := s.load(name)
	if err != nil {
		unlock()
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st[name] = &st
	s.claimed[name] = exists
	if prev := s.held[name]; prev != nil {
		prev() // claimed again (another task was first): one lock a shard
	}
	s.held[name] = unlock
	return true, nil
}

// release gives a claimed shard back.
func (s *stateStore) release(name string) {
	s.mu.Lock()
	unlock := s.held[name]
	delete(s.held, name)
	if room := s.room[name]; room != nil {
		room.release()
		delete(s.room, name)
	}
	s.mu.Unlock()
	if unlock != nil {
		unlock()
	}
}

// get returns a copy of a shard's state.
func (s *stateStore) get(name string) ShardStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.st[name]
}

// note keeps a problem with the shard in memory (for the result), without
// writing: the storage keeps what it had.
func (s *stateStore) note(name, problem string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st[name].Error = problem
}

// update changes a shard's state and writes it: a landed shard's record;
// the claim of a shard being submitted or submitted (created only when
// absent: errClaimed when another's is there); no claim for a shard that
// failed or was cancelled (no job charges it), so that a later run claims
// it afresh. The change is taken in memory only once written: when the
// write fails, the run sees what the storage holds.
func (s *stateStore) update(name string, fn func(*ShardStatus)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := *s.st[name]
	fn(&next)
	i := s.index[name]
	sh := s.plan.Shards[i]
	next.Name, next.File, next.Plan = sh.Name, sh.File, s.fp
	problem := next.Error
	next.Error = "" // a problem is this run's, never stored
	switch next.State {
	case StateLanded:
		data, err := json.Marshal(next)
		if err != nil {
			return err
		}
		if err := s.b.put(s.ctx, shardKey(recordsDir, i, ".json"), append(data, '\n'), false); err != nil {
			return fmt.Errorf("export: writing the record of shard %s: %w", name, err)
		}
		s.claimed[name] = true
	case StateSubmitting, StateSubmitted:
		data, err := json.Marshal(next)
		if err != nil {
			return err
		}
		key := shardKey(claimsDir, i, ".json")
		data = append(data, '\n')
		if room := s.room[name]; room != nil && next.State == StateSubmitted {
			// The job id, into the room taken with the intent.
			delete(s.room, name)
			if err := room.commit(s.ctx, data); err != nil {
				return fmt.Errorf("export: writing the claim of shard %s: %w", name, err)
			}
			break
		}
		if next.State == StateSubmitting {
			// The intent: first the room its job id's record will need.
			if old := s.room[name]; old != nil {
				old.release()
				delete(s.room, name)
			}
			room, err := s.b.reserve(s.ctx, key, claimRoom)
			if err != nil {
				return fmt.Errorf("export: writing the claim of shard %s: %w", name, err)
			}
			s.room[name] = room
		}
		err = s.b.put(s.ctx, key, data, !s.claimed[name])
		if room := s.room[name]; err != nil && room != nil {
			room.release()
			delete(s.room, name)
		}
		if errors.Is(err, errExists) {
			return errClaimed
		}
		if err != nil {
			return fmt.Errorf("export: writing the claim of shard %s: %w", name, err)
		}
		s.claimed[name] = true
	default: // failed, cancelled, pending: no job holds the shard
		if s.claimed[name] {
			if err := s.b.remove(s.ctx, shardKey(claimsDir, i, ".json")); err != nil {
				return fmt.Errorf("export: releasing the claim of shard %s: %w", name, err)
			}
			s.claimed[name] = false
		}
	}
	if room := s.room[name]; room != nil && next.State != StateSubmitting {
		room.release() // the job id was recorded otherwise, or there is none
		delete(s.room, name)
	}
	next.Error = problem
	*s.st[name] = next
	return nil
}

// refresh reads the state of every shard: the records and claims the
// storage lists, each read (for a run's targets; the others by the
// listing alone). A shard this run holds keeps its state.
func (s *stateStore) refresh() error {
	records, err := s.list(recordsDir)
	if err != nil {
		return err
	}
	claims, err := s.list(claimsDir)
	if err != nil {
		return err
	}
	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 8)
		mu   sync.Mutex
		errs []error
	)
	for i, sh := range s.plan.Shards {
		s.mu.Lock()
		_, held := s.held[sh.Name]
		s.mu.Unlock()
		if held {
			continue
		}
		if !records[i] && !claims[i] || s.targets != nil && !s.targets[sh.Name] {
			st := &ShardStatus{Name: sh.Name, State: StatePending, File: sh.File}
			switch {
			case records[i]:
				st.State = StateLanded
			case claims[i]:
				st.State = StateSubmitted // or submitting: another run's
			}
			s.mu.Lock()
			if old := s.st[sh.Name]; old.State != st.State {
				s.st[sh.Name] = st
			}
			s.claimed[sh.Name] = records[i] || claims[i]
			s.mu.Unlock()
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			st, exists, err := s.load(sh.Name)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			s.mu.Lock()
			st.Error = s.st[sh.Name].Error
			s.st[sh.Name], s.claimed[sh.Name] = &st, exists
			s.mu.Unlock()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// list returns the shard indexes that have an object under dir (.json).
func (s *stateStore) list(dir string) (map[int]bool, error) {
	keys, err := s.b.list(s.ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("export: listing %s: %w", dir, err)
	}
	out := map[int]bool{}
	for _, key := range keys {
		var i int
		rest := strings.TrimPrefix(key, dir)
		if _, err := fmt.Sscanf(rest, "%05d.json", &i); err == nil && shardKey(dir, i, ".json") == key && i < len(s.plan.Shards) {
			out[i] = true
		}
	}
	return out, nil
}

// snapshot returns the export's state as this run sees it.
func (s *stateStore) snapshot() Manifest {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := Manifest{Version: PlanVersion, Plan: s.plan, UpdatedAt: time.Now().UTC()}
	for _, sh := range s.plan.Shards {
		m.Shards = append(m.Shards, *s.st[sh.Name])
	}
	return m
}
