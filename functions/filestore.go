package functions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/artifact/gcsartifact"

	"github.com/baton-run/baton/chatfiles"
	"github.com/baton-run/baton/usechat"
)

// newFiles returns the file store (given, or gcsartifact on the
// configured bucket) and the URL signer; both nil when files are off.
func newFiles(cfg Config, given artifact.Service, log *slog.Logger) (*chatfiles.Store, *usechat.FileURLs, error) {
	store := given
	if store == nil && cfg.FilesBucket != "" {
		var err error
		if store, err = gcsartifact.NewService(context.Background(), cfg.FilesBucket); err != nil {
			return nil, nil, fmt.Errorf("files bucket %q: %w", cfg.FilesBucket, err)
		}
	}
	if store == nil {
		return nil, nil, nil
	}
	if len(cfg.TokenKey) == 0 {
		return nil, nil, errors.New("files need BATON_TOKEN_KEY: their URLs are signed with it")
	}
	files := chatfiles.New(store, cfg.AppName, log)
	return files, usechat.NewFileURLs(files, cfg.TokenKey), nil
}
