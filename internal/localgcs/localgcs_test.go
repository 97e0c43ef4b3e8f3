package localgcs

import (
	"bytes"
	"errors"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/genai"
)

// TestArtifacts: ADK's gcsartifact saves, loads, lists and deletes through
// the in-process server, and a missing object's error is the storage
// client's ErrObjectNotExist (wrapped: gcsartifact's == check misses it).
func TestArtifacts(t *testing.T) {
	s, err := Start("b")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	a, err := s.Artifacts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	key := artifact.LoadRequest{AppName: "app", UserID: "u", SessionID: "s", FileName: "f", Version: 1}
	if _, err := a.Load(ctx, &key); !errors.Is(err, storage.ErrObjectNotExist) {
		t.Errorf("Load of a missing file: %v, want storage.ErrObjectNotExist", err)
	}
	data := []byte("\x89PNG\r\n")
	saved, err := a.Save(ctx, &artifact.SaveRequest{AppName: "app", UserID: "u", SessionID: "s", FileName: "f", Part: genai.NewPartFromBytes(data, "image/png")})
	if err != nil || saved.Version != 1 {
		t.Fatalf("Save = %+v, %v; want version 1", saved, err)
	}
	got, err := a.Load(ctx, &key)
	if err != nil || !bytes.Equal(got.Part.InlineData.Data, data) || got.Part.InlineData.MIMEType != "image/png" {
		t.Fatalf("Load = %+v, %v; want the saved bytes", got, err)
	}
	if names, err := s.Objects(ctx, "app/u/s/"); err != nil || len(names) != 1 || names[0] != "app/u/s/f/1" {
		t.Errorf("Objects = %v, %v; want app/u/s/f/1", names, err)
	}
	if err := a.Delete(ctx, &artifact.DeleteRequest{AppName: "app", UserID: "u", SessionID: "s", FileName: "f"}); err != nil {
		t.Fatal(err)
	}
	if names, err := s.Objects(ctx, "app/"); err != nil || len(names) != 0 {
		t.Errorf("Objects after Delete = %v, %v; want none", names, err)
	}
}
