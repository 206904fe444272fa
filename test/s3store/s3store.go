// Package s3store runs an S3-compatible object store on loopback for the tests: Flink's S3
// file system plugins keep checkpoints, savepoints and HA data in it as they do in AWS S3, and
// the tests list its objects to see what Flink wrote.
//
// The server is gofakes3 (github.com/johannesboyne/gofakes3), which implements S3's REST API
// (buckets, objects, ranged reads, listing v1 and v2, multi-object delete, multipart uploads)
// over an in-memory backend, in the test process. It accepts any credentials: it checks
// neither signatures nor keys, so Flink's clients sign as they would against AWS and the
// store takes the request. SeaweedFS's S3 gateway was the alternative; its server binary
// depends on some 500 modules (cloud SDKs, database drivers), whose build would take a large
// share of an empty machine's test budget.
package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// The credentials Flink's S3 plugins are configured with (s3.access-key, s3.secret-key). The
// store accepts any; these look like what a user writes.
const (
	AccessKey = "flink-test-access-key"
	SecretKey = "flink-test-secret-key"
)

// Server is a running object store.
type Server struct {
	// Endpoint is the store's base URL (s3.endpoint), path-style: buckets are the first path
	// segment (s3.path.style.access: true).
	Endpoint string
	backend  *recordingBackend
	http     *http.Server
	done     chan struct{}
}

// recordingBackend is the in-memory backend, remembering every object ever written: Flink
// deletes a checkpoint once a newer one subsumes it, so an object a restore read may be gone
// by the time a test looks for it.
type recordingBackend struct {
	*s3mem.Backend
	mu      sync.Mutex
	written map[string]bool // bucket + "/" + key
}

func (b *recordingBackend) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64,
	conditions *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	result, err := b.Backend.PutObject(bucket, key, meta, input, size, conditions)
	if err == nil {
		b.mu.Lock()
		b.written[bucket+"/"+key] = true
		b.mu.Unlock()
	}
	return result, err
}

// Start serves an object store on addr (host:port; port 0 picks a free one) with the given
// buckets created.
func Start(addr string, buckets ...string) (*Server, error) {
	backend := &recordingBackend{Backend: s3mem.New(), written: map[string]bool{}}
	for _, b := range buckets {
		if err := backend.CreateBucket(b); err != nil {
			return nil, fmt.Errorf("create bucket %s: %w", b, err)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("object store: %w", err)
	}
	fake := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog()), gofakes3.WithAutoBucket(false))
	s := &Server{Endpoint: "http://" + ln.Addr().String(), backend: backend, done: make(chan struct{}),
		http: &http.Server{Handler: fake.Server(), ReadHeaderTimeout: 30 * time.Second}}
	go func() {
		defer close(s.done)
		_ = s.http.Serve(ln)
	}()
	return s, nil
}

// Keys lists the keys of a bucket under prefix, sorted.
func (s *Server) Keys(bucket, prefix string) ([]string, error) {
	p := gofakes3.NewPrefix(&prefix, nil)
	list, err := s.backend.ListBucket(bucket, &p, gofakes3.ListBucketPage{})
	if err != nil {
		return nil, fmt.Errorf("list s3://%s/%s: %w", bucket, prefix, err)
	}
	keys := make([]string, 0, len(list.Contents))
	for _, c := range list.Contents {
		keys = append(keys, c.Key)
	}
	sort.Strings(keys)
	return keys, nil
}

// Written reports whether an object was ever written at key, deleted since or not.
func (s *Server) Written(bucket, key string) bool {
	s.backend.mu.Lock()
	defer s.backend.mu.Unlock()
	return s.backend.written[bucket+"/"+key]
}

// Object reads an object whole.
func (s *Server) Object(bucket, key string) ([]byte, error) {
	obj, err := s.backend.GetObject(bucket, key, nil)
	if err != nil {
		return nil, fmt.Errorf("get s3://%s/%s: %w", bucket, key, err)
	}
	defer obj.Contents.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(obj.Contents); err != nil {
		return nil, fmt.Errorf("read s3://%s/%s: %w", bucket, key, err)
	}
	return buf.Bytes(), nil
}

// Close stops the server; what it stored is gone.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	<-s.done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
