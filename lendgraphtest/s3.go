package lendgraphtest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// S3Store is an S3-compatible object store (MinIO, for one) that the fake
// keeps delivery files in instead of its own storage host, so the SDK's
// downloads meet a real store: its presigned links, Range, ETag and
// expiry. Requests are path-style (Endpoint/Bucket/key) and signed with AWS
// Signature Version 4 by the fake itself, with no dependency.
type S3Store struct {
	// Endpoint is the store's base address, e.g. http://127.0.0.1:9000.
	Endpoint string
	// Region is the signing region; empty means us-east-1.
	Region string
	// Bucket holds the files; the fake creates it when missing.
	Bucket string
	// AccessKeyID and SecretAccessKey are the store's credentials. The
	// secret signs links and never leaves the fake; the key id is part of
	// every presigned link, as with S3.
	AccessKeyID     string
	SecretAccessKey string
}

// WithS3Store makes the fake upload each delivery file to store when the
// job completes, and hand out resultsUrl links presigned for a GET of it
// (valid for the link TTL, see WithLinkTTL). The store checks the links on
// its own clock: Advance does not expire them; a short WithLinkTTL and real
// time do. Faults injected on the storage host do not reach the store.
// Enrichment results stay on the fake's storage host.
func WithS3Store(store S3Store) Option {
	return func(c *config) { c.s3 = &store }
}

func (st *S3Store) region() string {
	if st.Region == "" {
		return "us-east-1"
	}
	return st.Region
}

// presign returns a link for method on key ("" for the bucket itself),
// signed in its query string, valid for ttl from now.
func (st *S3Store) presign(method, key string, ttl time.Duration, now time.Time) (string, error) {
	base, err := url.Parse(strings.TrimRight(st.Endpoint, "/"))
	if err != nil || base.Host == "" || (base.Scheme != "http" && base.Scheme != "https") {
		return "", fmt.Errorf("S3Store.Endpoint %q: want an http(s) base address", st.Endpoint)
	}
	path := base.Path + "/" + st.Bucket
	if key != "" {
		path += "/" + key
	}
	secs := int64(ttl / time.Second)
	secs = min(max(secs, 1), 7*24*3600) // S3's bounds for X-Amz-Expires
	q := sigV4Query(method, base.Host, path, now, secs, st.region(), st.AccessKeyID, st.SecretAccessKey)
	return base.Scheme + "://" + base.Host + s3Escape(path, false) + "?" + q, nil
}

// sigV4Query returns the query string of a presigned request (AWS
// Signature Version 4, payload unsigned, only the host header signed).
func sigV4Query(method, host, path string, now time.Time, expires int64, region, keyID, secret string) string {
	now = now.UTC()
	date := now.Format("20060102")
	stamp := now.Format("20060102T150405Z")
	scope := date + "/" + region + "/s3/aws4_request"
	params := map[string]string{
		"X-Amz-Algorithm":     "AWS4-HMAC-SHA256",
		"X-Amz-Credential":    keyID + "/" + scope,
		"X-Amz-Date":          stamp,
		"X-Amz-Expires":       strconv.FormatInt(expires, 10),
		"X-Amz-SignedHeaders": "host",
	}
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	var q strings.Builder
	for i, k := range names {
		if i > 0 {
			q.WriteByte('&')
		}
		q.WriteString(s3Escape(k, true) + "=" + s3Escape(params[k], true))
	}
	canonical := strings.Join([]string{method, s3Escape(path, false), q.String(),
		"host:" + host + "\n", "host", "UNSIGNED-PAYLOAD"}, "\n")
	sum := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + stamp + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	key := hmacSHA256([]byte("AWS4"+secret), date)
	key = hmacSHA256(key, region)
	key = hmacSHA256(key, "s3")
	key = hmacSHA256(key, "aws4_request")
	return q.String() + "&X-Amz-Signature=" + hex.EncodeToString(hmacSHA256(key, toSign))
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// s3Escape is SigV4's URI encoding: unreserved characters as they are,
// every other byte as %XX; "/" kept in a path (slash false).
func s3Escape(s string, slash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
			b.WriteByte(c)
		case c == '/' && !slash:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// s3Do sends a presigned request to the store and fails on anything but
// 2xx (and the codes in ok).
func (st *S3Store) do(ctx context.Context, method, key string, body io.Reader, size int64, contentType string, ok ...int) error {
	link, err := st.presign(method, key, 15*time.Minute, time.Now())
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, link, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.ContentLength = size
		if size == 0 {
			req.Body = http.NoBody
		}
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the link's signature stays out of the message
		}
		return fmt.Errorf("S3 store %s %s: %w", method, st.Endpoint, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	for _, code := range ok {
		if resp.StatusCode == code {
			return nil
		}
	}
	code, _, _ := strings.Cut(string(b), "</Code>")
	_, code, _ = strings.Cut(code, "<Code>")
	return &storeError{what: fmt.Sprintf("S3 store %s /%s/%s", method, st.Bucket, key), status: resp.StatusCode, code: code}
}

// storeError is a store's answer other than 2xx.
type storeError struct {
	what   string
	status int
	code   string // the XML body's <Code>
}

func (e *storeError) Error() string { return fmt.Sprintf("%s: %d %s", e.what, e.status, e.code) }

// createBucket makes the bucket, or finds it there. A store still starting
// answers 503 (MinIO: XMinioServerNotInitialized, even after its readiness
// probe said ready): asked again for up to 30 s, as S3 clients retry 503.
func (st *S3Store) createBucket(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := st.do(ctx, http.MethodPut, "", nil, 0, "", http.StatusConflict)
		var se *storeError
		if !errors.As(err, &se) || se.status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// upload puts the file at path under key.
func (st *S3Store) upload(ctx context.Context, key, path, contentType string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return st.do(ctx, http.MethodPut, key, f, fi.Size(), contentType)
}
