package lendgraphtest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// object is a file held by the storage host: bytes in memory or a file on
// disk (large deliveries).
type object struct {
	data        []byte
	path        string
	contentType string
	name        string
	modTime     time.Time
	remote      bool // uploaded to the S3 store (WithS3Store)
}

// putObject stores data under key.
func (s *Server) putObject(key, name, contentType string, data []byte) {
	s.mu.Lock()
	s.objects[key] = &object{data: data, contentType: contentType, name: name, modTime: s.nowLocked()}
	s.mu.Unlock()
}

// putFileLocked stores the file at path under key (s.mu held); remote
// says it was uploaded to the S3 store under the same key.
func (s *Server) putFileLocked(key, name, contentType, path string, remote bool) {
	s.objects[key] = &object{path: path, contentType: contentType, name: name, modTime: s.nowLocked(), remote: remote}
}

// signedURLLocked returns a link to the object under key, valid for the
// configured TTL from now. Links are signed like S3 presigned URLs; those
// of the S3 store are S3 presigned URLs.
func (s *Server) signedURLLocked(key string) string {
	if obj := s.objects[key]; obj != nil && obj.remote {
		link, err := s.cfg.s3.presign(http.MethodGet, key, s.cfg.linkTTL, time.Now())
		if err != nil {
			panic("lendgraphtest: " + err.Error()) // the endpoint was used at Start
		}
		return link
	}
	exp := s.nowLocked().Add(s.cfg.linkTTL).Unix()
	q := url.Values{}
	q.Set("X-Expires", strconv.FormatInt(exp, 10))
	q.Set("X-Signature", s.sign(key, exp))
	return s.storage.URL + "/objects/" + url.PathEscape(key) + "?" + q.Encode()
}

func (s *Server) sign(key string, exp int64) string {
	m := hmac.New(sha256.New, s.secret)
	fmt.Fprintf(m, "%s\n%d", key, exp)
	return hex.EncodeToString(m.Sum(nil))
}

func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n<Error><Code>%s</Code><Message>%s</Message></Error>", code, msg)
}

// serveStorage is the S3-like object host behind signed links: it refuses
// requests that carry an Authorization header (400, as S3 does for a
// presigned URL plus a credential), answers 403 with an XML body for a bad
// or expired signature, and supports Range.
func (s *Server) serveStorage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s3Error(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "only GET and HEAD")
		return
	}
	if r.Header.Get("Authorization") != "" {
		s3Error(w, http.StatusBadRequest, "InvalidArgument", "Only one auth mechanism allowed; only the X-Signature parameter or the Authorization header should be specified")
		return
	}
	key, ok := strings.CutPrefix(r.URL.Path, "/objects/")
	if !ok {
		s3Error(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
		return
	}
	q := r.URL.Query()
	exp, err := strconv.ParseInt(q.Get("X-Expires"), 10, 64)
	if err != nil || !hmac.Equal([]byte(q.Get("X-Signature")), []byte(s.sign(key, exp))) {
		s3Error(w, http.StatusForbidden, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided.")
		return
	}
	s.mu.Lock()
	now := s.nowLocked()
	obj := s.objects[key]
	s.mu.Unlock()
	if now.Unix() > exp {
		s3Error(w, http.StatusForbidden, "AccessDenied", "Request has expired")
		return
	}
	if obj == nil {
		s3Error(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
		return
	}
	var rs io.ReadSeeker
	if obj.path != "" {
		f, err := os.Open(obj.path)
		if err != nil {
			s3Error(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
			return
		}
		defer f.Close()
		rs = f
	} else {
		rs = bytes.NewReader(obj.data)
	}
	w.Header().Set("Content-Type", obj.contentType)
	w.Header().Set("ETag", `"`+s.sign(key, 0)[:32]+`"`)
	http.ServeContent(w, r, obj.name, obj.modTime, rs)
}
