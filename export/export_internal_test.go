package export

import (
	"bytes"

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
