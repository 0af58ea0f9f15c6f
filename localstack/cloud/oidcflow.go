package cloud

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/team/identity"
)

// The local issuers' authorization-code flow with PKCE (RFC 6749 §4.1,
// RFC 7636), the one a browser app uses to sign a person in:
//
//	GET  /oidc/<name>/authorize  response_type=code, client_id, redirect_uri, state,
//	                             code_challenge, code_challenge_method=S256 [, nonce, scope]
//	                             a login page that takes a demo user's name
//	POST /oidc/<name>/authorize  the page's form: 303 to redirect_uri?code=…&state=…
//	POST /oidc/<name>/token      grant_type=authorization_code, code, redirect_uri,
//	                             client_id, code_verifier (form-encoded): the id_token
//	POST /oidc/<name>/clock      {"advance_seconds": n}: moves this issuer's clock (loopback
//	                             callers only), so a test sees a code expire without waiting
//
// Only S256 is taken: plain would hand the verifier to whoever reads the
// authorization request. A code is good once, for CodeTTL, for the client,
// redirect URI and challenge it was issued to; every mismatch is a 400
// with an OAuth error. Nothing is redirected on a bad authorization
// request: an unchecked redirect_uri must never receive one (§4.1.2.1).

// CodeTTL is how long an authorization code is good for.
const CodeTTL = 60 * time.Second

// authCode is what a code was issued to, and for whom.
type authCode struct {
	issuer, clientID, redirectURI, challenge, nonce, user string
	admin                                                 bool
	expires                                               time.Time
}

// authRequest is an authorization request's parameters, read from the
// query (GET) or the login form (POST, which carries them as hidden
// fields and is checked again: the form is the browser's to change).
type authRequest struct {
	ClientID, RedirectURI, State, Challenge, Nonce, Scope string
}

// clientIDPattern: a client id is what the token's aud becomes.
var clientIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// pkcePattern is RFC 7636's code_verifier (§4.1); an S256 challenge is 43
// characters of the same set (the base64url of 32 bytes, unpadded).
var pkcePattern = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

// now is the issuer's clock: the issuers' clock moved by its own offset.
func (is *Issuers) now(name string) time.Time {
	is.mu.Lock()
	defer is.mu.Unlock()
	clock := is.Now
	if clock == nil {
		clock = time.Now
	}
	return clock().Add(is.offsets[name])
}

func (is *Issuers) advance(w http.ResponseWriter, r *http.Request, name string) {
	var in struct {
		AdvanceSeconds int `json:"advance_seconds"`
	}
	if !loopbackCaller(r) {
		http.Error(w, "loopback callers only", http.StatusForbidden)
		return
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10)).Decode(&in); err != nil || in.AdvanceSeconds < 0 {
		http.Error(w, `give {"advance_seconds": n}, n ≥ 0`, http.StatusBadRequest)
		return
	}
	is.mu.Lock()
	if is.offsets == nil {
		is.offsets = map[string]time.Duration{}
	}
	is.offsets[name] += time.Duration(in.AdvanceSeconds) * time.Second
	is.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// oauthError answers a refused OAuth request (RFC 6749 §5.2).
func oauthError(w http.ResponseWriter, code, description string) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": description})
}

// readAuthRequest reads and checks an authorization request; the
// returned description says what is wrong.
func (is *Issuers) readAuthRequest(v url.Values) (authRequest, string) {
	a := authRequest{ClientID: v.Get("client_id"), RedirectURI: v.Get("redirect_uri"), State: v.Get("state"),
		Challenge: v.Get("code_challenge"), Nonce: v.Get("nonce"), Scope: v.Get("scope")}
	switch {
	case v.Get("response_type") != "code":
		return a, "response_type must be code"
	case !clientIDPattern.MatchString(a.ClientID):
		return a, "client_id must be 1 to 128 of A-Z a-z 0-9 . _ : -"
	case !is.redirectAllowed(a.RedirectURI):
		return a, "redirect_uri must be an http://localhost or http://127.0.0.1 URL or one of " + EnvCORSOrigins
	case a.State == "" || len(a.State) > 512:
		return a, "state must be 1 to 512 characters"
	case v.Get("code_challenge_method") != "S256":
		return a, "code_challenge_method must be S256 (plain is refused)"
	case len(a.Challenge) != 43 || !pkcePattern.MatchString(a.Challenge):
		return a, "code_challenge must be the unpadded base64url SHA-256 of the verifier (43 characters)"
	case len(a.Nonce) > 512:
		return a, "nonce must be at most 512 characters"
	}
	return a, ""
}

// redirectAllowed: a loopback http URL (a native app or a dev server on
// any port) or a URL on one of the origins the local APIs answer; no
// fragment and no user info (RFC 6749 §3.1.2).
func (is *Issuers) redirectAllowed(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Fragment != "" || u.User != nil || u.Host == "" || u.Opaque != "" {
		return false
	}
	if u.Scheme == "http" && (u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1") {
		return true
	}
	return (u.Scheme == "http" || u.Scheme == "https") && slices.Contains(is.RedirectOrigins, u.Scheme+"://"+u.Host)
}

// loginPage has no script and no inline style, so it renders under the
// strict policy authorize sends with it. Its pattern escapes "|" and "-":
// browsers compile a pattern attribute with the v flag, where both are
// syntax inside a class.
var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in · {{.Issuer}}</title></head>
<body><h1>Sign in</h1>
<p>Local issuer {{.Issuer}}, for {{.ClientID}}. Any name signs in: this is a demo user.</p>
<form method="post" action="authorize">
<input type="hidden" name="response_type" value="code">
<input type="hidden" name="code_challenge_method" value="S256">
<input type="hidden" name="client_id" value="{{.ClientID}}">
<input type="hidden" name="redirect_uri" value="{{.RedirectURI}}">
<input type="hidden" name="state" value="{{.State}}">
<input type="hidden" name="code_challenge" value="{{.Challenge}}">
<input type="hidden" name="nonce" value="{{.Nonce}}">
<input type="hidden" name="scope" value="{{.Scope}}">
<p><label>User <input name="user" required maxlength="128" pattern="[A-Za-z0-9._@:\|+\-]+" autofocus></label></p>
<p><label><input type="checkbox" name="admin" value="1"> admin</label></p>
<p><button type="submit">Sign in</button></p>
</form></body></html>
`))

func (is *Issuers) authorize(w http.ResponseWriter, r *http.Request, name string) {
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, 1<<14)
		if err := r.ParseForm(); err != nil {
			oauthError(w, "invalid_request", "the form could not be read")
			return
		}
	}
	v := r.URL.Query()
	if r.Method == http.MethodPost {
		v = r.PostForm
	}
	a, wrong := is.readAuthRequest(v)
	if wrong != "" {
		oauthError(w, "invalid_request", wrong)
		return
	}
	if r.Method == http.MethodGet {
		u, _ := url.Parse(a.RedirectURI)
		// form-action covers the redirect that follows the form in the
		// browsers that enforce it there, so it names the app's origin.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action 'self' "+u.Scheme+"://"+u.Host+"; frame-ancestors 'none'")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_ = loginPage.Execute(w, struct {
			authRequest
			Issuer string
		}{a, is.URL(name)})
		return
	}
	user := v.Get("user")
	if !identity.ValidUserID(user) {
		oauthError(w, "invalid_request", "user must be 1 to 128 of A-Z a-z 0-9 . _ @ : | + -")
		return
	}
	code := is.issueCode(authCode{issuer: name, clientID: a.ClientID, redirectURI: a.RedirectURI, challenge: a.Challenge,
		nonce: a.Nonce, user: user, admin: v.Get("admin") != "", expires: is.now(name).Add(CodeTTL)})
	to, _ := url.Parse(a.RedirectURI)
	q := to.Query()
	q.Set("code", code)
	q.Set("state", a.State)
	to.RawQuery = q.Encode()
	// 303: the browser follows with a GET, never re-posting the form.
	http.Redirect(w, r, to.String(), http.StatusSeeOther)
}

func (is *Issuers) issueCode(c authCode) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	code := base64.RawURLEncoding.EncodeToString(b)
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.codes == nil {
		is.codes = map[string]authCode{}
	}
	for k, old := range is.codes { // expired codes go as new ones come
		if time.Now().After(old.expires.Add(time.Hour)) {
			delete(is.codes, k)
		}
	}
	is.codes[code] = c
	return code
}

// takeCode removes the code and returns it: a code is spent by its first
// redemption, good or bad, so a stolen one tried with a guessed verifier
// is of no use afterwards either.
func (is *Issuers) takeCode(code string) (authCode, bool) {
	is.mu.Lock()
	defer is.mu.Unlock()
	c, ok := is.codes[code]
	delete(is.codes, code)
	return c, ok
}

// redeem answers POST /oidc/<name>/token with grant_type=authorization_code.
func (is *Issuers) redeem(w http.ResponseWriter, form url.Values, name string) {
	if gt := form.Get("grant_type"); gt != "authorization_code" {
		oauthError(w, "unsupported_grant_type", "grant_type must be authorization_code")
		return
	}
	code, verifier := form.Get("code"), form.Get("code_verifier")
	switch {
	case code == "" || form.Get("client_id") == "" || form.Get("redirect_uri") == "":
		oauthError(w, "invalid_request", "give code, redirect_uri, client_id and code_verifier")
		return
	case !pkcePattern.MatchString(verifier):
		oauthError(w, "invalid_request", "code_verifier must be 43 to 128 of A-Z a-z 0-9 - . _ ~")
		return
	}
	c, ok := is.takeCode(code)
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	switch {
	case !ok || c.issuer != name:
		oauthError(w, "invalid_grant", "unknown or spent code")
	case !is.now(name).Before(c.expires):
		oauthError(w, "invalid_grant", "the code expired")
	case c.clientID != form.Get("client_id"):
		oauthError(w, "invalid_grant", "the code was issued to another client_id")
	case c.redirectURI != form.Get("redirect_uri"):
		oauthError(w, "invalid_grant", "the code was issued for another redirect_uri")
	case subtle.ConstantTimeCompare([]byte(challenge), []byte(c.challenge)) != 1:
		oauthError(w, "invalid_grant", "code_verifier does not match the code_challenge")
	default:
		is.issue(w, name, TokenRequest{User: c.user, Admin: c.admin, Audience: c.clientID}, c.nonce)
	}
}

// isJSON tells the loopback shortcut's JSON body from a form: curl -d
// labels both form-encoded, so the body is what tells them apart.
func isJSON(body []byte) bool {
	return strings.HasPrefix(strings.TrimSpace(string(body)), "{")
}
