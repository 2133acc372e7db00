package export

import "bytes"

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
