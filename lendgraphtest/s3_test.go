package lendgraphtest

import (
	"strings"
	"testing"
	"time"
)

// The example of AWS's "Authenticating Requests: Using Query Parameters
// (AWS Signature Version 4)": a GET of examplebucket/test.txt presigned for
// 86400 seconds.
func TestSigV4QueryMatchesAWSExample(t *testing.T) {
	at := time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC)
	q := sigV4Query("GET", "examplebucket.s3.amazonaws.com", "/test.txt", at, 86400, "us-east-1",
		"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
	want := "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request" +
		"&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host" +
		"&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
	if q != want {
		t.Fatalf("query\n got %s\nwant %s", q, want)
	}
}

func TestS3StorePresignIsPathStyle(t *testing.T) {
	st := &S3Store{Endpoint: "http://127.0.0.1:9000/", Bucket: "deliveries", AccessKeyID: "id", SecretAccessKey: "secret"}
	link, err := st.presign("GET", "dlv_1 x.csv", 90*time.Second, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(link, "http://127.0.0.1:9000/deliveries/dlv_1%20x.csv?X-Amz-Algorithm=") ||
		!strings.Contains(link, "X-Amz-Expires=90&") || strings.Contains(link, "secret") {
		t.Fatalf("link %s", link)
	}
	if _, err := (&S3Store{Endpoint: "127.0.0.1:9000"}).presign("GET", "k", time.Minute, time.Now()); err == nil {
		t.Fatal("an endpoint without a scheme was accepted")
	}
}
