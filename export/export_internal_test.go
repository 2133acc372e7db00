package export

import (
	"bytes"
	"context"
	"sync/atomic"

	"gocloud.dev/blob"
)

// EncodeIDDigest and DecodeIDDigest let the tests write and read the id
// digests Commit checks.
func EncodeIDDigest(hashes []uint64) []byte { return encodeDigest(hashes) }

func DecodeIDDigest(data []byte) ([]uint64, error) {
	var out []uint64
	_, err := readDigest(bytes.NewReader(data), func(h uint64) error {
		out = append(out, h)
		return nil
	})
	return out, err
}

// BucketStorage is the storage of an export in a bucket the test opened
// itself (memblob, a driver that injects faults, a second handle on one
// bucket, as a second task has). Closing it closes b.
func BucketStorage(b *blob.Bucket, where string) *Storage {
	return &Storage{b: &bucketBackend{b: b}, where: where}
}

// CountWrites is st with every byte the export writes into it (its small
// objects and its data files) added to n: a counting layer under the
// export.
func CountWrites(st *Storage, n *atomic.Int64) *Storage {
	return &Storage{b: countingBackend{st.b, n}, where: st.where}
}

type countingBackend struct {
	backend
	n *atomic.Int64
}

func (c countingBackend) put(ctx context.Context, key string, data []byte, exclusive bool) error {
	c.n.Add(int64(len(data)))
	return c.backend.put(ctx, key, data, exclusive)
}

func (c countingBackend) reserve(ctx context.Context, key string, size int) (reservation, error) {
	r, err := c.backend.reserve(ctx, key, size)
	if err != nil {
		return nil, err
	}
	return countingReservation{r, c.n}, nil
}

type countingReservation struct {
	reservation
	n *atomic.Int64
}

func (c countingReservation) commit(ctx context.Context, data []byte) error {
	c.n.Add(int64(len(data)))
	return c.reservation.commit(ctx, data)
}

func (c countingBackend) create(ctx context.Context, key, contentType string, staged bool) (dataWriter, error) {
	w, err := c.backend.create(ctx, key, contentType, staged)
	if err != nil {
		return nil, err
	}
	return countingWriter{w, c.n}, nil
}

type countingWriter struct {
	dataWriter
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.dataWriter.Write(b)
	c.n.Add(int64(n))
	return n, err
}
