// Package mcppackstore keeps a team's MCP packs (toolpacks.MCPPack) on the
// single table: one item per pack under its team, and a counter item whose
// condition holds the team to toolpacks.MaxMCPPacks (the pack and the
// counter move in one transaction, so concurrent registrations cannot
// pass the cap and a deleted pack frees its place).
package mcppackstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

// Store is the MCP-pack half of the single-table store.
type Store struct{ *dynamo.Store }

var _ toolpacks.MCPPackStore = (*Store)(nil)

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{dynamo.New(db, table)} }

const (
	rolePack    = "tool pack"
	roleCounter = "tool pack counter"
	attrCount   = "packs"
)

// packItem is an MCP pack as stored; its tools are one JSON string (a
// list of schemas DynamoDB need not see into).
type packItem struct {
	PK               string    `dynamodbav:"pk"`
	SK               string    `dynamodbav:"sk"`
	Name             string    `dynamodbav:"name"`
	Description      string    `dynamodbav:"description"`
	URL              string    `dynamodbav:"url"`
	CredentialHeader string    `dynamodbav:"credential_header,omitempty"`
	SecretID         string    `dynamodbav:"secret_id,omitempty"`
	Tools            string    `dynamodbav:"tools"`
	ListedAt         time.Time `dynamodbav:"listed_at"`
	CreatedAt        time.Time `dynamodbav:"created_at"`
	UpdatedAt        time.Time `dynamodbav:"updated_at"`
	UpdatedBy        string    `dynamodbav:"updated_by,omitempty"`
}

func toItem(teamID string, r toolpacks.MCPPack) (packItem, error) {
	tools, err := json.Marshal(r.Tools)
	if err != nil {
		return packItem{}, err
	}
	return packItem{PK: dynamo.TeamPK(teamID), SK: dynamo.ToolPackSK(r.Name), Name: r.Name, Description: r.Description, URL: r.URL,
		CredentialHeader: r.CredentialHeader, SecretID: r.SecretID, Tools: string(tools), ListedAt: r.ListedAt.UTC(),
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), UpdatedBy: r.UpdatedBy}, nil
}

func fromItem(m map[string]types.AttributeValue) (toolpacks.MCPPack, error) {
	var it packItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return toolpacks.MCPPack{}, err
	}
	r := toolpacks.MCPPack{Name: it.Name, Description: it.Description, URL: it.URL, CredentialHeader: it.CredentialHeader,
		SecretID: it.SecretID, HasCredential: it.SecretID != "", ListedAt: it.ListedAt, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt, UpdatedBy: it.UpdatedBy}
	if err := json.Unmarshal([]byte(it.Tools), &r.Tools); err != nil {
		return toolpacks.MCPPack{}, err
	}
	return r, nil
}

func counterKey(teamID string) map[string]types.AttributeValue {
	return dynamo.Key(dynamo.TeamPK(teamID), dynamo.SKToolPacks)
}

// CreateMCPPack implements toolpacks.MCPPackStore: the pack (its key free)
// and the counter (below the cap) in one transaction.
func (s *Store) CreateMCPPack(ctx context.Context, teamID string, r toolpacks.MCPPack) error {
	it, err := toItem(teamID, r)
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	tx := s.Txn()
	tx.Create(rolePack, it)
	below := expression.Or(expression.AttributeNotExists(dynamo.Name(attrCount)), dynamo.Name(attrCount).LessThan(dynamo.Value(toolpacks.MaxMCPPacks)))
	tx.Update(roleCounter, counterKey(teamID), expression.Add(dynamo.Name(attrCount), dynamo.Value(1)), below)
	err = tx.RunConflicting(ctx)
	if c, ok := dynamo.AsCanceled(err); ok {
		switch c.Role {
		case rolePack:
			return apperr.New(apperr.ECONFLICT, "tool pack %q was created meanwhile", r.Name)
		case roleCounter:
			return toolpacks.LimitError()
		}
		return apperr.Wrap(apperr.ECONFLICT, err, "tool pack %q was written meanwhile; retry", r.Name)
	}
	return err
}

// ReplaceMCPPack implements toolpacks.MCPPackStore: a put conditioned on
// the pack existing.
func (s *Store) ReplaceMCPPack(ctx context.Context, teamID string, r toolpacks.MCPPack) error {
	it, err := toItem(teamID, r)
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	tx := s.Txn()
	tx.Put(rolePack, it, expression.AttributeExists(dynamo.Name("pk")))
	err = tx.RunConflicting(ctx)
	if c, ok := dynamo.AsCanceled(err); ok && c.Role == rolePack {
		return apperr.NotFound("tool pack", r.Name)
	}
	return err
}

// GetMCPPack implements toolpacks.MCPPackStore: one consistent GetItem.
func (s *Store) GetMCPPack(ctx context.Context, teamID, name string) (toolpacks.MCPPack, error) {
	return dynamo.Get(ctx, s, dynamo.Key(dynamo.TeamPK(teamID), dynamo.ToolPackSK(name)), "tool pack", name, fromItem)
}

// ListMCPPacks implements toolpacks.MCPPackStore: one query of the team's
// pack prefix (at most MaxMCPPacks items).
func (s *Store) ListMCPPacks(ctx context.Context, teamID string) ([]toolpacks.MCPPack, error) {
	var out []toolpacks.MCPPack
	err := s.QueryAll(ctx, dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.PrefixToolPack, true), func(m map[string]types.AttributeValue) error {
		r, err := fromItem(m)
		if err == nil {
			out = append(out, r)
		}
		return err
	})
	return out, err
}

// DeleteMCPPack implements toolpacks.MCPPackStore: the pack (existing) and
// one off the counter, in one transaction.
func (s *Store) DeleteMCPPack(ctx context.Context, teamID, name string) error {
	tx := s.Txn()
	tx.Delete(rolePack, dynamo.Key(dynamo.TeamPK(teamID), dynamo.ToolPackSK(name)), expression.AttributeExists(dynamo.Name("pk")))
	tx.Update(roleCounter, counterKey(teamID), expression.Add(dynamo.Name(attrCount), dynamo.Value(-1)), expression.ConditionBuilder{})
	err := tx.RunConflicting(ctx)
	if c, ok := dynamo.AsCanceled(err); ok && c.Role == rolePack {
		return apperr.NotFound("tool pack", name)
	}
	return err
}
