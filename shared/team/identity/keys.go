package identity

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// RefetchEvery is how often, at most, an issuer's discovery document and
// key set are fetched again (an unknown kid, or a failed fetch).
const RefetchEvery = time.Minute

// maxDocument bounds a discovery document or a key set.
const maxDocument = 1 << 20

// KeyCache fetches and caches each issuer's signing keys in the warm
// function: the discovery document names the JWKS; both are fetched on
// the issuer's first token, and again on an unknown kid at most once per
// RefetchEvery. In steady state a token costs no network call.
type KeyCache struct {
	// Client fetches the documents; its transport dials under the
	// stage's network policy (toolpacks.NetPolicy.Dialer).
	Client *http.Client
	// CheckURL is the network policy on a URL (the jwks_uri a discovery
	// document names); nil accepts any.
	CheckURL func(string) error
	Now      func() time.Time

	mu   sync.Mutex
	sets map[string]*keySet
}

type keySet struct {
	keys    jose.JSONWebKeySet
	fetched time.Time
	err     error
}

// Key implements KeySource.
func (c *KeyCache) Key(ctx context.Context, issuer, kid string) (*jose.JSONWebKey, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sets == nil {
		c.sets = map[string]*keySet{}
	}
	now := c.now()
	s := c.sets[issuer]
	if s != nil {
		if k := find(s.keys, kid); k != nil {
			return k, nil
		}
		if now.Sub(s.fetched) < RefetchEvery {
			if s.err != nil {
				return nil, s.err
			}
			return nil, unknownKey(kid)
		}
	}
	keys, err := c.fetch(ctx, issuer)
	if err != nil && s != nil {
		keys = s.keys // keep the keys known while the issuer does not answer
	}
	c.sets[issuer] = &keySet{keys: keys, fetched: now, err: err}
	if k := find(keys, kid); k != nil {
		return k, nil
	}
	if err != nil {
		return nil, err
	}
	return nil, unknownKey(kid)
}

// find is the signing key of kid (an empty kid: the set's only key).
func find(set jose.JSONWebKeySet, kid string) *jose.JSONWebKey {
	var signing []jose.JSONWebKey
	for _, k := range set.Keys {
		if k.Use == "" || k.Use == "sig" {
			signing = append(signing, k)
		}
	}
	for i := range signing {
		if kid != "" && signing[i].KeyID == kid || kid == "" && len(signing) == 1 {
			return &signing[i]
		}
	}
	return nil
}

func (c *KeyCache) fetch(ctx context.Context, issuer string) (jose.JSONWebKeySet, error) {
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := c.get(ctx, strings.TrimSuffix(issuer, "/")+"/.well-known/openid-configuration", &doc); err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("discovery: %w", err)
	}
	if doc.Issuer != issuer {
		return jose.JSONWebKeySet{}, fmt.Errorf("discovery names issuer %q, not %q", doc.Issuer, issuer)
	}
	var set jose.JSONWebKeySet
	if err := c.get(ctx, doc.JWKSURI, &set); err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("jwks: %w", err)
	}
	return set, nil
}

func (c *KeyCache) get(ctx context.Context, u string, out any) error {
	if c.CheckURL != nil {
		if err := c.CheckURL(u); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	client := c.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d", u, resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, maxDocument)).Decode(out)
}

func (c *KeyCache) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
