package export

import (
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

	"gocloud.dev/blob"

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

// Commit finishes an export in a bucket once every shard of its plan
// (PlanFile) has landed, from any number of tasks and machines: it checks
// that every shard has a record that matches its data object (size and
// ETag, without reading it), and that no id appears twice across the
// dataset, from the shards' id digests in bounded memory (without
// downloading the data again; only when an id shows twice are the data
// files of the shards in the error's examples read, to name the ids). Then it writes ManifestFile (the plan and
// every shard's job, rows, bytes, sha256 and charge), and SuccessFile last:
// a reader that sees _SUCCESS sees the whole dataset. It removes
// _SUCCESS first, so a dataset that does not check out has none. In a
// file:// destination it also removes the temporary files that writers
// killed mid-write left beside their final names.
//
// Errors: *CommitError names the shards not landed or not matching their
// records; *DuplicateError the ids found twice (the manifest is written,
// with the verification that failed, and no _SUCCESS). Commit submits
// nothing and charges nothing; running it again is safe.
func Commit(ctx context.Context, b *blob.Bucket, opts *CommitOptions) (*Manifest, error) {
	var o CommitOptions
	if opts != nil {
		o = *opts
	}
	if b == nil {
		return nil, invalid("bucket", "is nil; open it with OpenBucket")
	}
	if o.Concurrency < 0 {
		return nil, invalid("Concurrency", "is %d; use a positive number, or 0 for the default, %d", o.Concurrency, DefaultCommitConcurrency)
	}
	plan, err := ReadBucketPlan(ctx, b)
	if err != nil {
		return nil, err
	}
	if err := deleteObject(ctx, b, SuccessFile); err != nil {
		return nil, err
	}
	shards, err := readRecords(ctx, b, plan, cmp.Or(o.Concurrency, DefaultCommitConcurrency))
	if err != nil {
		return nil, err
	}
	if err := sweepTemporaries(ctx, b); err != nil {
		return nil, err
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
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeObject(ctx, b, ManifestFile, append(data, '\n'), false); err != nil {
		return nil, fmt.Errorf("export: writing %s: %w", ManifestFile, err)
	}
	if count > 0 {
		return m, &DuplicateError{Count: count, Examples: v.Duplicates}
	}
	if err := writeBlob(ctx, b, SuccessFile, nil); err != nil {
		return m, fmt.Errorf("export: writing %s: %w", SuccessFile, err)
	}
	return m, nil
}

// sweepTemporaries removes, from a file:// destination, the temporary
// files of writers killed before they renamed them into place: a reader
// of the directory (Spark) would take them for data. An object store
// writes an object whole or not at all, and has none: only a directory
// is listed.
func sweepTemporaries(ctx context.Context, b *blob.Bucket) error {
	if !isDirectory(b) {
		return nil
	}
	keys, err := listKeys(ctx, b, "")
	if err != nil {
		return fmt.Errorf("export: listing the destination for temporary files: %w", err)
	}
	for _, key := range keys {
		if fileblobTemporary.MatchString(key) {
			if err := deleteObject(ctx, b, key); err != nil {
				return err
			}
		}
	}
	return nil
}

// readRecords reads and checks the record of every shard of the plan
// against its data object, n at once.
func readRecords(ctx context.Context, b *blob.Bucket, plan *Plan, n int) ([]ShardStatus, error) {
	shards := make([]ShardStatus, len(plan.Shards))
	fails := make([]error, len(plan.Shards))
	missing := make([]bool, len(plan.Shards))
	var wg sync.WaitGroup
	sem := make(chan struct{}, n)
	for i, sh := range plan.Shards {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			data, err := readObject(ctx, b, shardKey(recordsDir, i, ".json"))
			if notFound(err) {
				missing[i] = true
				return
			}
			if err != nil {
				fails[i] = err
				return
			}
			var rec ShardStatus
			if err := json.Unmarshal(data, &rec); err != nil {
				fails[i] = fmt.Errorf("its record does not decode: %w", err)
				return
			}
			switch {
			case rec.Name != sh.Name || rec.File != sh.File:
				fails[i] = fmt.Errorf("its record is of shard %q (%s), not of this plan's", rec.Name, rec.File)
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
func addDigest(ctx context.Context, b *blob.Bucket, rec *ShardStatus, set *idSet, idx int32) error {
	r, err := b.NewReader(ctx, rec.IDs.Object, nil)
	if err != nil {
		return fmt.Errorf("reading its id digest: %w", err)
	}
	defer r.Close()
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
func resolveDuplicates(ctx context.Context, b *blob.Bucket, plan *Plan, shards []ShardStatus, found []dupFound) ([]dupFound, error) {
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

// scanObject decodes a data object of the bucket, giving every id to sink.
func scanObject(ctx context.Context, b *blob.Bucket, key string, format lendgraph.Format, sink func(string) error) error {
	if format == lendgraph.FormatParquet {
		attrs, err := b.Attributes(ctx, key)
		if err != nil {
			return err
		}
		_, err = countRows(ctx, parquet.Decode[idRow](newObjectReaderAt(ctx, b, key), attrs.Size), sink)
		return err
	}
	r, err := b.NewReader(ctx, key, nil)
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = countStream(ctx, r, format, sink)
	return err
}

// commit finishes the bucket's dataset after a run of every shard.
func (r *runner[T]) commit(ctx context.Context) error {
	m, err := Commit(ctx, r.opts.Bucket, nil)
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
