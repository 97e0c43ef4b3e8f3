package localgcs

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/artifact/gcsartifact"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
)

// Server is a Cloud Storage API in process, holding one bucket in memory.
type Server struct {
	srv    *fakestorage.Server
	Bucket string
}

// Start serves a new, empty bucket.
func Start(bucket string) (*Server, error) {
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true})
	if err != nil {
		return nil, fmt.Errorf("in-process Cloud Storage: %w", err)
	}
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	return &Server{srv: srv, Bucket: bucket}, nil
}

// options reach the server through its in-process transport.
func (s *Server) options() []option.ClientOption {
	return []option.ClientOption{option.WithHTTPClient(s.srv.HTTPClient())}
}

// Artifacts is ADK's Cloud Storage artifact service on the bucket.
func (s *Server) Artifacts(ctx context.Context) (artifact.Service, error) {
	return gcsartifact.NewService(ctx, s.Bucket, s.options()...)
}

// Client is a storage client of the server.
func (s *Server) Client(ctx context.Context) (*storage.Client, error) {
	return storage.NewClient(ctx, s.options()...)
}

// Objects lists the names of the bucket's objects under prefix, sorted.
func (s *Server) Objects(ctx context.Context, prefix string) ([]string, error) {
	c, err := s.Client(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var names []string
	it := c.Bucket(s.Bucket).Objects(ctx, &storage.Query{Prefix: prefix})
	for {
		o, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, err
		}
		names = append(names, o.Name)
	}
	sort.Strings(names)
	return names, nil
}

// Stop ends the server.
func (s *Server) Stop() { s.srv.Stop() }
