package a2aremote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
)

// ErrFileTooLarge: a file a remote's result names is larger than the
// deployment keeps.
var ErrFileTooLarge = errors.New("file over the size limit")

// Fetch reads the file a part of the remote's result names by URL, by
// the same outbound rules as the remote itself: the dialer's address
// check (unless AllowPrivate), no redirects, the request timeout. The
// remote's configured headers (its credentials) go only to the card's
// own host, never to another. A file over limit bytes is ErrFileTooLarge,
// read no further; an address the check refuses is ErrBlockedAddress. It
// returns the bytes and the media type the response names.
func (a *Agent) Fetch(ctx context.Context, rawURL string, limit int64) ([]byte, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, "", fmt.Errorf("%w: file URL %q: want an http(s) URL", ErrRefused, rawURL)
	}
	client := a.http
	if u.Host != a.base.Host {
		client = a.bare
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, ErrBlockedAddress) {
			return nil, "", fmt.Errorf("fetch %s: %w", u.Redacted(), ErrBlockedAddress)
		}
		return nil, "", fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("fetch %s: %w: status %d", u.Redacted(), ErrRefused, resp.StatusCode)
	}
	if resp.ContentLength > limit {
		return nil, "", fmt.Errorf("fetch %s: %w: %d bytes", u.Redacted(), ErrFileTooLarge, resp.ContentLength)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, "", fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	if int64(len(b)) > limit {
		return nil, "", fmt.Errorf("fetch %s: %w: more than %d bytes", u.Redacted(), ErrFileTooLarge, limit)
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return b, mediaType, nil
}
