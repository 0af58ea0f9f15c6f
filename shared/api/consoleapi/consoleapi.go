// Package consoleapi serves the team's console (docs/console.md): a web
// page at /console on the HTTP API that talks to the team through the
// public API only, as any other client does. The function holds no
// credential and reads no table: its files are static, bundled beside its
// bootstrap at build time (localstack/console.sh), and the one dynamic
// answer is config.json, what the page needs to find the streaming API
// and the sign-in provider.
//
// The browser is the threat model: agent text is untrusted, so every
// answer carries a Content-Security-Policy that allows scripts and styles
// from this origin only (no inline script, no eval), connections to the
// two APIs and the sign-in provider only, images from this origin and
// data: only, and no framing.
package consoleapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/bundled"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
)

// The routes (shared/platform/manifest): public at the gateway, since a
// browser loads a page before anyone signs in.
const (
	RouteIndex  = "GET /console"
	RouteFile   = "GET /console/{file}"
	RouteVendor = "GET /console/vendor/{file}"
)

// DirEnv overrides where the bundle is (bundled.Dir): "web" beside the
// bootstrap in Lambda, .local/console of the repository locally.
const DirEnv = "CONCLAVE_CONSOLE_DIR"

// ConfigFile is the one answer made at run time.
const ConfigFile = "config.json"

// Dir is the directory of the console's bundle.
func Dir() (string, error) {
	return bundled.Dir(DirEnv, "web", "console", "console", func(d string) bool {
		st, err := os.Stat(filepath.Join(d, "index.html"))
		return err == nil && st.Mode().IsRegular()
	})
}

// Config is what the page reads from config.json.
type Config struct {
	// StreamURL is the streaming API's base URL ("": the stage has none;
	// replies then arrive whole from the HTTP API).
	StreamURL string `json:"stream_url"`
	// OIDC is the sign-in provider; nil: API keys only.
	OIDC *OIDC `json:"oidc"`
	// AllowRemoteImages lets rendered replies load images from other
	// origins; false (always, for now: the CSP allows none).
	AllowRemoteImages bool `json:"allow_remote_images"`
}

// OIDC names the provider the console signs people in with.
type OIDC struct {
	Issuer   string `json:"issuer"`
	ClientID string `json:"client_id"`
	// TokenEndpoint is where the page redeems its code, from the
	// provider's discovery document (Discover): often on another origin
	// than the issuer (Cognito's hosted domain, Google's), which the
	// policy must then allow. Empty until discovered.
	TokenEndpoint string `json:"token_endpoint,omitempty"`
}

// asset is one file, ready to answer.
type asset struct {
	body, gz []byte
	ctype    string
	etag     string
}

// Handler serves the console.
type Handler struct {
	files map[string]asset // "index.html", "vendor/marked.esm.js"
	csp   string
	cfg   Config
	// discover reads the provider's token endpoint once, at the first
	// request (not at the cold start: locally the issuer is served by
	// the process that builds the handler), bounded by DiscoverTimeout;
	// nil: no provider or nothing to read.
	discover func(ctx context.Context) (string, error)
	once     sync.Once
}

// DiscoverTimeout bounds the read of the provider's discovery document:
// the first request waits for it at most this long, then answers with
// the issuer's origin alone allowed.
const DiscoverTimeout = 3 * time.Second

// WithDiscovery makes h read the provider's token endpoint from its
// discovery document with client, once, before its first answer. A
// failure is logged and leaves the issuer's origin alone allowed.
func (h *Handler) WithDiscovery(client *http.Client, log *slog.Logger) *Handler {
	if h.cfg.OIDC == nil {
		return h
	}
	issuer := h.cfg.OIDC.Issuer
	h.discover = func(ctx context.Context) (string, error) {
		te, err := Discover(ctx, client, issuer)
		if err != nil {
			log.WarnContext(ctx, "console: the sign-in provider's token endpoint is unknown: the page may redeem a code on the issuer's origin only", "issuer", issuer, "error", err.Error())
		}
		return te, err
	}
	return h
}

// Discover reads the token endpoint from issuer's OpenID Connect
// discovery document.
func Discover(ctx context.Context, client *http.Client, issuer string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, DiscoverTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(issuer, "/")+"/.well-known/openid-configuration", nil)
	if err != nil {
		return "", err
	}
	res, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("discovery answered %d", res.StatusCode)
	}
	var doc struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 64<<10)).Decode(&doc); err != nil {
		return "", fmt.Errorf("discovery document: %w", err)
	}
	if u, err := url.Parse(doc.TokenEndpoint); err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
		return "", fmt.Errorf("discovery document: token_endpoint %q is not a URL", doc.TokenEndpoint)
	}
	return doc.TokenEndpoint, nil
}

// fileName is what a {file} segment may be: a plain name with one of the
// bundle's extensions (nothing else is looked up).
var fileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.(html|js|mjs|css|json|svg|txt)$`)

// Load reads the bundle in dir (its top level and vendor/) and builds the
// answers for cfg.
func Load(dir string, cfg Config) (*Handler, error) {
	h := &Handler{files: map[string]asset{}}
	for _, sub := range []string{"", "vendor"} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil && sub == "vendor" && os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("console bundle: %w", err)
		}
		for _, e := range entries {
			// .json: config.json is made here, and a package file is
			// never the page's.
			if !e.Type().IsRegular() || !fileName.MatchString(e.Name()) || filepath.Ext(e.Name()) == ".json" {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, sub, e.Name()))
			if err != nil {
				return nil, fmt.Errorf("console bundle: %w", err)
			}
			h.files[strings.TrimPrefix(sub+"/"+e.Name(), "/")] = newAsset(b, e.Name())
		}
	}
	if _, ok := h.files["index.html"]; !ok {
		return nil, fmt.Errorf("console bundle: no index.html in %s", dir)
	}
	h.cfg = cfg
	h.configure(cfg)
	return h, nil
}

// configure makes config.json and the policy for cfg.
func (h *Handler) configure(cfg Config) {
	conf, _ := json.Marshal(cfg) // plain strings and a bool
	h.files[ConfigFile] = newAsset(conf, ConfigFile)
	h.csp = CSP(cfg)
}

// resolve reads the provider's token endpoint, once: the policy then
// allows its origin too.
func (h *Handler) resolve(ctx context.Context) {
	if h.discover == nil {
		return
	}
	if te, err := h.discover(ctx); err == nil {
		oidc := *h.cfg.OIDC
		oidc.TokenEndpoint = te
		cfg := h.cfg
		cfg.OIDC = &oidc
		h.configure(cfg)
	}
}

func newAsset(b []byte, name string) asset {
	ctype := mime.TypeByExtension(filepath.Ext(name))
	switch filepath.Ext(name) {
	case ".js", ".mjs":
		ctype = "text/javascript; charset=utf-8"
	case ".json":
		ctype = "application/json"
	}
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	_, _ = w.Write(b)
	_ = w.Close()
	sum := sha256.Sum256(b)
	return asset{body: b, gz: gz.Bytes(), ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
}

// CSP is the Content-Security-Policy of every answer: scripts, styles
// and images from this origin only; connections to this origin (the HTTP
// API), the streaming API and the sign-in provider only; no plugin, no
// frame, no form posted anywhere, no <base>.
func CSP(cfg Config) string {
	connect := []string{"'self'"}
	for _, u := range append([]string{cfg.StreamURL}, providerURLs(cfg)...) {
		if o := origin(u); o != "" && !slices.Contains(connect, o) {
			connect = append(connect, o)
		}
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src " + strings.Join(connect, " ") +
		"; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
}

// providerURLs are the provider's issuer (the page reads its discovery
// document there) and token endpoint (it redeems its code there).
func providerURLs(cfg Config) []string {
	if cfg.OIDC == nil {
		return nil
	}
	return []string{cfg.OIDC.Issuer, cfg.OIDC.TokenEndpoint}
}

// origin is u's scheme://host[:port], "" for "" or a malformed URL.
func origin(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" || p.Host == "" {
		return ""
	}
	return p.Scheme + "://" + p.Host
}

// Serve implements the function. Every answer names its trace, as the
// API's do.
func (h *Handler) Serve(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (res events.APIGatewayV2HTTPResponse, _ error) {
	defer func() { httpapi.Traced(ctx, &res) }()
	h.once.Do(func() { h.resolve(ctx) })
	name := ""
	switch ev.RouteKey {
	case RouteIndex:
		name = "index.html"
	case RouteFile:
		name = ev.PathParameters["file"]
	case RouteVendor:
		name = "vendor/" + ev.PathParameters["file"]
	}
	a, ok := h.files[name]
	if !ok || !fileName.MatchString(filepath.Base(name)) {
		return h.notFound(ev), nil
	}
	hdr := h.headers(ev, a)
	if match := header(ev.Headers, "if-none-match"); match != "" && match == a.etag {
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusNotModified, Headers: hdr}, nil
	}
	body := a.body
	if acceptsGzip(header(ev.Headers, "accept-encoding")) {
		body, hdr["Content-Encoding"] = a.gz, "gzip"
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK, Headers: hdr,
		Body: base64.StdEncoding.EncodeToString(body), IsBase64Encoded: true}, nil
}

// headers of every answer: the policy, and no sniffing, referrer or
// framing. The files' names carry no hash, so a browser revalidates
// each (ETag): a new deployment is seen at the next load.
func (h *Handler) headers(ev events.APIGatewayV2HTTPRequest, a asset) map[string]string {
	return map[string]string{
		"Content-Type":                 a.ctype,
		"Content-Security-Policy":      h.csp,
		"X-Content-Type-Options":       "nosniff",
		"X-Frame-Options":              "DENY",
		"Referrer-Policy":              "no-referrer",
		"Cross-Origin-Opener-Policy":   "same-origin",
		"Cross-Origin-Resource-Policy": "same-origin",
		"Permissions-Policy":           "camera=(), microphone=(), geolocation=(), payment=()",
		"Cache-Control":                "no-cache",
		"ETag":                         a.etag,
		"Vary":                         "Accept-Encoding",
		"X-Request-Id":                 ev.RequestContext.RequestID,
	}
}

func (h *Handler) notFound(ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	body, _ := json.Marshal(httpapi.ErrorBody{RequestID: ev.RequestContext.RequestID,
		Error: httpapi.ErrorDetail{Code: apperr.ENOTFOUND, Message: "the console has no such file", Field: "file"}})
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusNotFound, Body: string(body), Headers: map[string]string{
		"Content-Type": "application/json", "X-Content-Type-Options": "nosniff", "Content-Security-Policy": h.csp,
		"X-Request-Id": ev.RequestContext.RequestID,
	}}
}

// header reads a request header whatever its case (API Gateway lower-cases
// them; a test may not).
func header(h map[string]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// acceptsGzip: the client lists gzip without q=0.
func acceptsGzip(v string) bool {
	for _, part := range strings.Split(v, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
