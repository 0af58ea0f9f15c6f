package toolpacks

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
)

// NetPolicy is where an MCP pack may connect. Deployed, only https to
// public addresses: a team must not reach the stage's own network, the
// instance metadata service or another tenant's private services through
// Conclave's functions (server-side request forgery). The policy is
// checked twice: on the URL when a pack is put or called, and on the address of
// every connection when it is made (the adapter's dialer), so a name
// that resolves to a public address at PUT and to a private one later
// (DNS rebinding) is still refused.
type NetPolicy struct {
	// LoopbackOnly is the local cloud's policy (MCP_LOOPBACK_ONLY): a
	// pack reaches a server on this machine (127.0.0.0/8, ::1,
	// localhost) over http or https, and nothing else, so no local test
	// ever reaches outside the machine (a URL elsewhere is refused before
	// any name is resolved). A deployed stage never sets it.
	LoopbackOnly bool
}

// CheckURL checks a pack's URL: deployed, https to a host that is not a
// loopback, private or reserved address literal nor an internal name;
// with LoopbackOnly, http or https to a loopback host. No user info, no
// fragment. Returns EINVALID (url) or EREJECTED (MCPURLRefused).
func (p NetPolicy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" || (u.Scheme != "https" && u.Scheme != "http") {
		return apperr.Invalid("url", "url must be an absolute https URL")
	}
	if u.User != nil {
		return apperr.Invalid("url", "url must not carry user info: give the credential instead")
	}
	if u.Fragment != "" {
		return apperr.Invalid("url", "url must not have a fragment")
	}
	host := strings.ToLower(u.Hostname())
	loopback := host == "localhost" || isLoopbackLiteral(host)
	if p.LoopbackOnly {
		if !loopback {
			return refusedURL("this stage's MCP packs reach loopback servers only (the local cloud)")
		}
		return nil
	}
	if u.Scheme != "https" {
		return refusedURL("url must use https")
	}
	if loopback {
		return refusedURL("url points at a loopback address")
	}
	if ip, err := netip.ParseAddr(host); err == nil && !p.AllowedAddr(ip) {
		return refusedURL("url points at a private, loopback, link-local or reserved address")
	}
	if strings.HasSuffix(host, ".internal") || strings.HasSuffix(host, ".local") || strings.HasSuffix(host, ".localhost") || !strings.Contains(host, ".") && !strings.Contains(host, ":") {
		return refusedURL("url points at an internal name")
	}
	return nil
}

func isLoopbackLiteral(host string) bool {
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

func refusedURL(msg string) error {
	return apperr.New(apperr.EREJECTED, "%s", msg).WithReason(ReasonURLRefused)
}

// reserved are the ranges no pack may reach besides what netip already
// classifies (private, loopback, link-local, multicast, unspecified).
var reserved = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",          // "this network"
		"100.64.0.0/10",      // carrier-grade NAT
		"192.0.0.0/24",       // IETF protocol assignments
		"192.0.2.0/24",       // documentation
		"198.18.0.0/15",      // benchmarking
		"198.51.100.0/24",    // documentation
		"203.0.113.0/24",     // documentation
		"240.0.0.0/4",        // reserved, broadcast included
		"64:ff9b::/96",       // NAT64: an IPv4 address behind it is unchecked
		"64:ff9b:1::/48",     // local-use NAT64
		"2001:db8::/32",      // documentation
		"2002::/16",          // 6to4: embeds an IPv4 address
		"fec0::/10",          // site-local (deprecated)
		"::ffff:0:0:0/96",    // IPv4-translated
		"::/96",              // IPv4-compatible (deprecated): embeds an IPv4 address
		"192.88.99.0/24",     // 6to4 relay anycast
		"2001:10::/28",       // ORCHID
		"100::/64",           // discard
		"2001::/32",          // Teredo
		"fd00:ec2::/32",      // EC2's IPv6 metadata service and DNS (inside fc00::/7 too)
		"169.254.169.254/32", // EC2 metadata (inside link-local too)
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// AllowedAddr reports whether a connection to ip is allowed: a public
// address deployed, a loopback one with LoopbackOnly.
func (p NetPolicy) AllowedAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if p.LoopbackOnly || ip.IsLoopback() {
		return p.LoopbackOnly && ip.IsLoopback()
	}
	if !ip.IsValid() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() ||
		ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, r := range reserved {
		if r.Contains(ip) {
			return false
		}
	}
	return true
}

// ErrAddress is a connection the policy refused (Dialer).
var ErrAddress = errors.New("the address is outside what the stage's network policy lets Conclave reach")

// Dialer is a dialer that checks the address each connection is about to
// use against p (its Control hook), so DNS rebinding cannot reach a
// private address: the MCP packs' and the A2A agents' transports dial
// with it, and use no proxy (a proxy would hide the address).
func (p NetPolicy) Dialer() *net.Dialer {
	return &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		if !p.AllowedHostPort(address) {
			return fmt.Errorf("%w: %s", ErrAddress, address)
		}
		return nil
	}}
}

// AllowedHostPort is AllowedAddr on a dialed "host:port" (the dialer's
// Control hook: the address the connection is about to use).
func (p NetPolicy) AllowedHostPort(address string) bool {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && p.AllowedAddr(ip)
}
