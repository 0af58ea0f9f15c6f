// Package identitystore stores teams' OpenID Connect providers on the
// single table: it implements identity.Store over the shared core
// (shared/store/dynamo). A provider is two kinds of item written in one
// transaction: the team's (TEAM#<team> / IDENTITY) and one per (issuer,
// audience) pair (OIDC#<issuer>#<audience> / IDENTITY), created only if
// no other team holds it. The pair item carries the whole provider, so
// the authorizer finds a token's team and its claims in one GetItem.
package identitystore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/team/identity"
)

// Store is identity.Store on the table.
type Store struct{ *dynamo.Store }

var _ identity.Store = (*Store)(nil)

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{dynamo.New(db, table)} }

// Roles of a registration's writes.
const (
	roleIdentity = "identity"
	rolePair     = "issuer pair"
	roleOldPair  = "old issuer pair"
)

// providerItem is the team's provider item and, under the pair's key,
// each pair item.
type providerItem struct {
	PK         string    `dynamodbav:"pk"`
	SK         string    `dynamodbav:"sk"`
	Type       string    `dynamodbav:"type"`
	TeamID     string    `dynamodbav:"team_id"`
	Issuer     string    `dynamodbav:"issuer"`
	Audiences  []string  `dynamodbav:"audiences"`
	UserClaim  string    `dynamodbav:"user_claim"`
	AdminClaim string    `dynamodbav:"admin_claim,omitempty"`
	AdminValue string    `dynamodbav:"admin_value,omitempty"`
	UpdatedAt  time.Time `dynamodbav:"updated_at"`
}

func toItem(p identity.Provider, pk, typ string) providerItem {
	return providerItem{PK: pk, SK: dynamo.SKIdentity, Type: typ, TeamID: p.TeamID, Issuer: p.Issuer,
		Audiences: p.Audiences, UserClaim: p.UserClaim, AdminClaim: p.AdminClaim, AdminValue: p.AdminValue, UpdatedAt: p.UpdatedAt}
}

func (i providerItem) toProvider() identity.Provider {
	return identity.Provider{TeamID: i.TeamID, Issuer: i.Issuer, Audiences: i.Audiences, UserClaim: i.UserClaim,
		AdminClaim: i.AdminClaim, AdminValue: i.AdminValue, UpdatedAt: i.UpdatedAt}
}

func decode(m map[string]types.AttributeValue) (identity.Provider, error) {
	var it providerItem
	err := dynamo.Unmarshal(m, &it)
	return it.toProvider(), err
}

// GetProvider implements identity.Store.
func (s *Store) GetProvider(ctx context.Context, teamID string) (identity.Provider, error) {
	return dynamo.Get(ctx, s, dynamo.Key(dynamo.TeamPK(teamID), dynamo.SKIdentity), "identity provider", teamID, decode)
}

// ProviderByPair implements identity.Store: one GetItem.
func (s *Store) ProviderByPair(ctx context.Context, issuer, audience string) (identity.Provider, error) {
	return dynamo.Get(ctx, s, dynamo.Key(dynamo.OIDCPK(issuer, audience), dynamo.SKIdentity), "issuer", issuer, decode)
}

// PutProvider implements identity.Store: the team's item, conditioned on
// the version read (its updated_at), each pair created unless another
// team holds it, and the pairs no longer named deleted, in one
// transaction.
func (s *Store) PutProvider(ctx context.Context, p identity.Provider) error {
	old, err := s.GetProvider(ctx, p.TeamID)
	if err != nil && !apperr.Is(err, apperr.ENOTFOUND) {
		return err
	}
	mine := dynamo.Name("team_id").Equal(dynamo.Value(p.TeamID))
	tx := s.Txn()
	if old.TeamID == "" {
		tx.Create(roleIdentity, toItem(p, dynamo.TeamPK(p.TeamID), "identity"))
	} else {
		tx.Put(roleIdentity, toItem(p, dynamo.TeamPK(p.TeamID), "identity"), dynamo.Name("updated_at").Equal(dynamo.Value(old.UpdatedAt)))
	}
	keep := map[string]bool{}
	for _, aud := range p.Audiences {
		pk := dynamo.OIDCPK(p.Issuer, aud)
		keep[pk] = true
		tx.Put(rolePair, toItem(p, pk, "oidc_pair"), expression.AttributeNotExists(dynamo.Name(dynamo.AttrPK)).Or(mine))
	}
	for _, aud := range old.Audiences {
		if pk := dynamo.OIDCPK(old.Issuer, aud); !keep[pk] {
			tx.Delete(roleOldPair, dynamo.Key(pk, dynamo.SKIdentity), mine)
		}
	}
	err = tx.Run(ctx)
	if c, ok := dynamo.AsCanceled(err); ok {
		if c.Role == rolePair {
			return apperr.New(apperr.ECONFLICT, "another team registered this issuer with one of these audiences").
				WithReason(identity.ReasonPairTaken).WithDetail("field", "audiences")
		}
		return apperr.New(apperr.ECONFLICT, "the team's identity provider changed meanwhile, retry")
	}
	return err
}
