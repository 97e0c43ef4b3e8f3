package chatfiles

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/adk/v2/artifact"
	"google.golang.org/genai"
)

// SaveOnce saves blob as the file name of user's chat unless a file of
// that name is stored already, and returns the reference to the file as
// stored: its first version (versions count from 1, and a file's
// versions are deleted only all together). A caller that may store the
// same file again (a delivery repeated, a process that died after the
// save) names it after what it is, so that the file is stored once. Two savers at the
// same moment may both store a version; both refer to the first, and the
// other is deleted with the chat.
func (s *Store) SaveOnce(ctx context.Context, user, chat, name string, blob *genai.Blob) (Ref, error) {
	if s == nil {
		return Ref{}, fmt.Errorf("%w: no file store", ErrNotFound)
	}
	ref := Ref{ChatID: chat, Name: name, MIMEType: blob.MIMEType, DisplayName: blob.DisplayName}
	versions, err := s.files.Versions(ctx, &artifact.VersionsRequest{AppName: s.app, UserID: user, SessionID: chat, FileName: name})
	if err == nil && len(versions.Versions) > 0 {
		ref.Version = slices.Min(versions.Versions)
		return ref, nil
	}
	if _, err := s.files.Save(ctx, &artifact.SaveRequest{AppName: s.app, UserID: user, SessionID: chat, FileName: name,
		Part: &genai.Part{InlineData: &genai.Blob{Data: blob.Data, MIMEType: blob.MIMEType}}}); err != nil {
		return Ref{}, fmt.Errorf("save file %q: %w", name, err)
	}
	// Versions count from 1 and are deleted only all together: whichever
	// version this save got, the first exists.
	ref.Version = 1
	return ref, nil
}

// ResponseRefs returns the reference parts of the files p, a function
// response, holds among its parts (a remote agent's files: the session
// stores the references, Plugin hands the model their bytes, and pages
// show them as files of the call's message); nil for any other part.
func ResponseRefs(p *genai.Part) []*genai.Part {
	var out []*genai.Part
	for _, ref := range responseRefs(p) {
		out = append(out, ref.Part())
	}
	return out
}

func responseRefs(p *genai.Part) []Ref {
	if p == nil || p.FunctionResponse == nil {
		return nil
	}
	var out []Ref
	for _, fp := range p.FunctionResponse.Parts {
		if ref, ok := responseRef(fp); ok {
			out = append(out, ref)
		}
	}
	return out
}

func responseRef(fp *genai.FunctionResponsePart) (Ref, bool) {
	if fp == nil || fp.FileData == nil {
		return Ref{}, false
	}
	return RefOf(&genai.Part{FileData: &genai.FileData{FileURI: fp.FileData.FileURI, MIMEType: fp.FileData.MIMEType, DisplayName: fp.FileData.DisplayName}})
}
