package sessionstore

import (
	"context"
	"time"
)

// RenewLease renews l once, as KeepLease does every third of its term, so
// that the lease tests can pin the time of each renewal.
func (s *Service) RenewLease(ctx context.Context, l *Lease, ttl time.Duration) error {
	return s.renewLease(ctx, l, ttl)
}

// Expires is when l runs out unless renewed.
func (l *Lease) Expires() time.Time { return l.expiry() }
