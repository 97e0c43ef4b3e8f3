package a2aremote

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"
)

// ErrBlockedAddress: a remote's address is loopback, private, link-local,
// multicast or unspecified, and the remote is not configured to allow it.
var ErrBlockedAddress = errors.New("address not allowed for a remote agent")

// blocked reports whether ip is an address a remote agent may not have
// unless configured.
func blocked(ip net.IP) bool {
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified()
}

// guard is a dialer's Control that refuses blocked addresses: it runs on
// the address the connection is made to, after name resolution.
func guard(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q: %w", ErrBlockedAddress, address, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || blocked(ip) {
		return fmt.Errorf("%w: %s", ErrBlockedAddress, host)
	}
	return nil
}

// httpClient is the client a remote's requests go through: a fresh
// transport (never http.DefaultTransport, whose dialers a test or a
// library may have replaced) whose dialer checks each address unless
// allowPrivate, no redirects, and timeout per request.
func httpClient(allowPrivate bool, timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = guard
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         dialer.DialContext,
			ForceAttemptHTTP2:   true,
			MaxIdleConns:        20,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
