package export

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/parquet"
)

// CommitOptions tune Commit.
type CommitOptions struct {
	// Concurrency is the number of shards' records checked at once
	// (default DefaultCommitConcurrency).
	Concurrency int
	// TempDir is where the duplicate check spills the ids' hashes once
	// they are many ("" for the system's temporary directory); memory
	// stays near that of bucketIDs of them (see dupcheck.go).
	TempDir string
}

// DefaultCommitConcurrency is how many shards Commit checks at once by
// default.
const DefaultCommitConcurrency = 8

// CommitError is a dataset that cannot be committed: shards with no record
// (not landed yet, or their task died before recording them), and shards
// whose record does not match their data object. Nothing was written.
type CommitError struct {
	// Missing are the shards with no record.
	Missing []string
	// Mismatched are the shards whose record and data disagree (each
	// ShardFailure says how). Running the shard again lands it again from
	// its job (no new charge).
	Mismatched []ShardFailure
}

// Error implements the error interface.
func (e *CommitError) Error() string {
	var parts []string
	if n := len(e.Missing); n > 0 {
		parts = append(parts, fmt.Sprintf("%s not landed (%s)", plural(n, "shard"), examples(e.Missing)))
	}
	if n := len(e.Mismatched); n > 0 {
		var names []string
		for _, f := range e.Mismatched {
			names = append(names, f.Shard+": "+f.Err.Error())
		}
		parts = append(parts, fmt.Sprintf("%s whose record does not match its data (%s)", plural(n, "shard"), examples(names)))
	}
	return "export: cannot commit: " + strings.Join(parts, "; ") + "; run those shards (the same plan) again, then commit"
}

// examples lists the first few of names.
func examples(names []string) string {
	if len(names) <= 5 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
}

// Commit finishes an export once every shard of its plan (PlanFile) has
// landed, from any number of runs, tasks and machines: it checks that every
// shard has a record that matches its data file (size and ETag in a bucket,
// without reading it; size and sha256 in a directory), and that no id
// appears twice across the dataset, from the shards' id digests in
// bounded memory (without reading the data again; only when an id shows
// twice are the data files of the shards in the error's examples read, to
// name the ids). Then it writes ManifestFile (the plan and every shard's
// job, rows, bytes, sha256 and charge), and SuccessFile last: a reader
// that sees _SUCCESS sees the whole dataset. It removes _SUCCESS first, so
// a dataset that does not check out has none. In a directory it also
// removes the temporary files that writers killed mid-write left.
//
// Errors: *CommitError names the shards not landed or not matching their
// records; *DuplicateError the ids found twice (the manifest is written,
// with the verification that failed, and no _SUCCESS). Commit submits
// nothing and charges nothing; running it again is safe.
func Commit(ctx context.Context, st *Storage, opts *CommitOptions) (*Manifest, error) {
	var o CommitOptions
	if opts != nil {
		o = *opts
	}
	if err := checkStorage(st); err != nil {
		return nil, err
	}
	if o.Concurrency < 0 {
		return nil, invalid("Concurrency", "is %d; use a positive number, or 0 for the default, %d", o.Concurrency, DefaultCommitConcurrency)
	}
	plan, err := ReadPlan(ctx, st)
	if err != nil {
		return nil, err
	}
	b := st.b
	if err := b.remove(ctx, SuccessFile); err != nil {
		return nil, fmt.Errorf("export: removing %s: %w", SuccessFile, err)
	}
	shards, err := readRecords(ctx, b, plan, cmp.Or(o.Concurrency, DefaultCommitConcurrency))
	if err != nil {
		return nil, err
	}
	if err := b.sweep(ctx); err != nil {
		return nil, fmt.Errorf("export: removing temporary files: %w", err)
	}
	set := newIDSet(plan.Total, o.TempDir)
	defer set.Close()
	for i := range shards {
		if err := addDigest(ctx, b, &shards[i], set, int32(i)); err != nil {
			return nil, fmt.Errorf("export: shard %s: %w", shards[i].Name, err)
		}
	}
	count, found, err := set.Check()
	if err != nil {
		return nil, err
	}
	if count > 0 {
		if found, err = resolveDuplicates(ctx, b, plan, shards, found); err != nil {
			return nil, err
		}
	}
	v := newVerification(plan, shards, count, found)
	m := &Manifest{Version: PlanVersion, Plan: plan, Shards: shards, Verification: v, UpdatedAt: v.VerifiedAt}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if err := b.put(ctx, ManifestFile, append(data, '\n'), false); err != nil {
		return nil, fmt.Errorf("export: writing %s: %w", ManifestFile, err)
	}
	if count > 0 {
		return m, &DuplicateError{Count: count, Examples: v.Duplicates}
	}
	if err := b.put(ctx, SuccessFile, nil, false); err != nil {
		return m, fmt.Errorf("export: writing %s: %w", SuccessFile, err)
	}
	return m, nil
}

// readRecords reads and checks the record of every shard of the plan
// against its data object, n at once.
func readRecords(ctx context.Context, b backend, plan *Plan, n int) ([]ShardStatus, error) {
	shards := make([]ShardStatus, len(plan.Shards))
	fails := make([]error, len(plan.Shards))
	missing := make([]bool, len(plan.Shards))
	fp := plan.fingerprint()
	var wg sync.WaitGroup
	sem := make(chan struct{}, n)
	for i, sh := range plan.Shards {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var rec ShardStatus
			err := readJSON(ctx, b, shardKey(recordsDir, i, ".json"), &rec)
			if isNotFound(err) {
				missing[i] = true
				return
			}
			if err != nil {
				fails[i] = fmt.Errorf("its record: %w", err)
				return
			}
			switch {
			case rec.Name != sh.Name || rec.File != sh.File || rec.Plan != fp:
				fails[i] = fmt.Errorf("its record is of another plan (shard %q, %s, plan %s)", rec.Name, rec.File, rec.Plan)
			case rec.IDs == nil || rec.SHA256 == "" || rec.JobID == "":
				fails[i] = errors.New("its record lacks the job, the sha256 or the id digest")
			default:
				if why := objectMatches(ctx, b, &rec); why != "" {
					fails[i] = errors.New(why)
				}
			}
			rec.State = StateLanded
			shards[i] = rec
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var ce CommitError
	for i, sh := range plan.Shards {
		switch {
		case missing[i]:
			ce.Missing = append(ce.Missing, sh.Name)
		case fails[i] != nil:
			ce.Mismatched = append(ce.Mismatched, ShardFailure{Shard: sh.Name, JobID: shards[i].JobID, Err: fails[i]})
		}
	}
	if len(ce.Missing)+len(ce.Mismatched) > 0 {
		return nil, &ce
	}
	return shards, nil
}

// addDigest streams a shard's id digest into the duplicate check, checking
// it against the record: its sha256, and one id a row.
func addDigest(ctx context.Context, b backend, rec *ShardStatus, set *idSet, idx int32) error {
	var r io.Reader = bytes.NewReader(rec.IDs.Data)
	if rec.IDs.Object != "" {
		rc, _, err := b.open(ctx, rec.IDs.Object)
		if err != nil {
			return fmt.Errorf("reading its id digest: %w", err)
		}
		defer rc.Close()
		r = rc
	}
	h := sha256.New()
	var key [8]byte
	n, err := readDigest(io.TeeReader(r, h), func(id uint64) error {
		binary.BigEndian.PutUint64(key[:], id)
		return set.Add(string(key[:]), idx)
	})
	switch {
	case err != nil:
		return fmt.Errorf("its id digest: %w", err)
	case hex.EncodeToString(h.Sum(nil)) != rec.IDs.SHA256:
		return errors.New("its id digest does not match its record's sha256 (run the shard again)")
	case n != rec.Rows:
		return fmt.Errorf("its id digest holds %d ids for %d rows (run the shard again)", n, rec.Rows)
	}
	return nil
}

// resolveDuplicates names the ids of the duplicates found by hash: it
// reads the data files of the shards involved (only when the digests
// showed an id twice), and reports each example by its id. An example
// whose two rows have different ids (their hashes collided) is reported
// as such.
func resolveDuplicates(ctx context.Context, b backend, plan *Plan, shards []ShardStatus, found []dupFound) ([]dupFound, error) {
	want := map[int32]map[string]string{} // shard → hash → id found there
	for _, d := range found {
		for _, i := range d.shards {
			if want[i] == nil {
				want[i] = map[string]string{}
			}
			want[i][d.id] = ""
		}
	}
	var key [8]byte
	for i, hashes := range want {
		err := scanObject(ctx, b, shards[i].File, plan.Request.Format, func(id string) error {
			binary.BigEndian.PutUint64(key[:], idHash(id))
			if got, ok := hashes[string(key[:])]; ok && got == "" {
				hashes[string(key[:])] = id
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("export: naming the ids found twice: shard %s: %w", shards[i].Name, err)
		}
	}
	out := make([]dupFound, 0, len(found))
	for _, d := range found {
		a, b := want[d.shards[0]][d.id], want[d.shards[1]][d.id]
		switch {
		case a != "" && a == b:
			d.id = a
		case a != "" && b != "":
			d.id = fmt.Sprintf("%s and %s (two ids of the same hash)", a, b)
		default:
			d.id = "id hash " + hex.EncodeToString([]byte(d.id)) + " (a digest does not match its data: run the shard again)"
		}
		out = append(out, d)
	}
	return out, nil
}

// scanObject decodes a data object, giving every id to sink.
func scanObject(ctx context.Context, b backend, key string, format lendgraph.Format, sink func(string) error) error {
	ids := func(row *checkRow) error { return sink(row.ID) }
	if format == lendgraph.FormatParquet {
		ra, size, closeFile, err := b.openAt(ctx, key)
		if err != nil {
			return err
		}
		defer closeFile()
		_, err = countRows(ctx, parquet.Decode[checkRow](ra, size), ids)
		return err
	}
	r, _, err := b.open(ctx, key)
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = countStream(ctx, r, format, ids)
	return err
}

// objectMatches is "" when the shard's data file is there as its record
// says, else what is wrong: its size, and its ETag where the store gives
// one (without reading it), else its sha256.
func objectMatches(ctx context.Context, b backend, rec *ShardStatus) string {
	size, etag, err := b.stat(ctx, rec.File)
	switch {
	case isNotFound(err):
		return "its data file " + rec.File + " is missing"
	case err != nil:
		return err.Error()
	case size != rec.Bytes:
		return fmt.Sprintf("%s has %d bytes, %d when it landed", rec.File, size, rec.Bytes)
	case rec.ETag != "":
		if etag != rec.ETag {
			return fmt.Sprintf("%s was written again since it landed (ETag %s, %s when it landed)", rec.File, etag, rec.ETag)
		}
		return ""
	}
	r, _, err := b.open(ctx, rec.File)
	if err != nil {
		return err.Error()
	}
	defer r.Close()
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx, r}); err != nil {
		return err.Error()
	}
	if hex.EncodeToString(h.Sum(nil)) != rec.SHA256 {
		return fmt.Sprintf("%s was written again since it landed (its sha256 differs from its record's)", rec.File)
	}
	return ""
}

// ctxReader stops a read when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}

// commit finishes the dataset after a run of every shard.
func (r *runner[T]) commit(ctx context.Context) error {
	m, err := Commit(ctx, r.st, nil)
	if m != nil {
		r.verification(m.Verification)
	}
	if err == nil {
		r.mu.Lock()
		r.res.Complete = true
		r.mu.Unlock()
	}
	return err
}

// newVerification sums up the check of a whole dataset: the shards' rows
// and charges, and the duplicates found.
func newVerification(p *Plan, shards []ShardStatus, count int64, found []dupFound) *Verification {
	v := &Verification{Files: len(shards), PlannedRows: p.Total, DuplicateIDs: count, VerifiedAt: time.Now().UTC()}
	for _, s := range shards {
		v.LandedRows += s.Rows
		if s.ChargedCount != nil {
			v.ChargedRows += *s.ChargedCount
		}
		if s.CreditsCharged != nil {
			v.CreditsCharged += *s.CreditsCharged
		}
		v.UncertainRows += p.lostRows(&s)
	}
	for _, d := range found {
		v.Duplicates = append(v.Duplicates, Duplicate{ID: d.id, Shards: [2]string{shards[d.shards[0]].Name, shards[d.shards[1]].Name}})
	}
	v.Complete = count == 0
	return v
}

// verification records the check in the result, with a warning when the
// landed rows are not the planned ones.
func (r *runner[T]) verification(v *Verification) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Verification = v
	if v.LandedRows != v.PlannedRows {
		more := "fewer"
		if v.LandedRows > v.PlannedRows {
			more = "more"
		}
		r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("landed %d rows, %d %s than the %d planned: the data changed between planning and delivery (or the entitlement's row filters hold some back)",
			v.LandedRows, abs(v.LandedRows-v.PlannedRows), more, v.PlannedRows))
	}
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
