// Package identityfake is the in-memory fake of identity.Store (the teams'
// OpenID Connect providers and the (issuer, audience) pairs they hold), as
// shared/store/identitystore is the DynamoDB one; both are held to the
// store contract (shared/testkit/storetest).
package identityfake

import (
	"context"
	"slices"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/identity"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
)

var _ identity.Store = (*Providers)(nil)

// Providers is identity.Store on a memtable.Table. Safe for concurrent use.
type Providers struct{ tb *memtable.Table }

// New returns the identity providers of tb (nil: a table of their own).
func New(tb *memtable.Table) *Providers {
	if tb == nil {
		tb = memtable.New()
	}
	return &Providers{tb: tb}
}

// pair is an (issuer, audience) pair, the key of the adapter's pair item.
type pair struct{ issuer, audience string }

// providers are the teams' providers, by team. Call with the table locked.
func (s *Providers) providers() map[string]identity.Provider {
	return *memtable.Part(s.tb, "identity", func() *map[string]identity.Provider {
		m := map[string]identity.Provider{}
		return &m
	})
}

// pairs are the team holding each pair. Call with the table locked.
func (s *Providers) pairs() map[pair]string {
	return *memtable.Part(s.tb, "identitypairs", func() *map[pair]string {
		m := map[pair]string{}
		return &m
	})
}

// providerOf copies p (its audiences) so a caller's later change does not
// reach the store.
func providerOf(p identity.Provider) identity.Provider {
	p.Audiences = slices.Clone(p.Audiences)
	return p
}

// PutProvider implements identity.Store: ECONFLICT (ReasonPairTaken) when
// another team holds one of the pairs, and then nothing is written; else
// the team's provider is replaced, its pairs taken and the pairs it no
// longer names released, as the adapter's transaction. The adapter
// conditions the team's item on the version it read; here the read and the
// write are one step under the table's lock, so the version read is always
// the current one and that condition cannot fail.
func (s *Providers) PutProvider(_ context.Context, p identity.Provider) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	pairs := s.pairs()
	for _, aud := range p.Audiences {
		if team, ok := pairs[pair{p.Issuer, aud}]; ok && team != p.TeamID {
			return apperr.New(apperr.ECONFLICT, "another team registered this issuer with one of these audiences").
				WithReason(identity.ReasonPairTaken).WithDetail("field", "audiences")
		}
	}
	if old, ok := s.providers()[p.TeamID]; ok {
		for _, aud := range old.Audiences {
			if k := (pair{old.Issuer, aud}); pairs[k] == p.TeamID {
				delete(pairs, k)
			}
		}
	}
	for _, aud := range p.Audiences {
		pairs[pair{p.Issuer, aud}] = p.TeamID
	}
	s.providers()[p.TeamID] = providerOf(p)
	return nil
}

// GetProvider implements identity.Store.
func (s *Providers) GetProvider(_ context.Context, teamID string) (identity.Provider, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	p, ok := s.providers()[teamID]
	if !ok {
		return identity.Provider{}, apperr.NotFound("identity provider", teamID)
	}
	return providerOf(p), nil
}

// ProviderByPair implements identity.Store: the provider of the team
// holding the pair (the adapter's pair item carries it whole).
func (s *Providers) ProviderByPair(_ context.Context, issuer, audience string) (identity.Provider, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	team, ok := s.pairs()[pair{issuer, audience}]
	if !ok {
		return identity.Provider{}, apperr.NotFound("issuer", issuer)
	}
	return providerOf(s.providers()[team]), nil
}
