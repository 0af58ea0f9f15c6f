package memorystore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/team/memory"
)

var (
	_ memory.Store     = (*Store)(nil)
	_ memory.Directory = (*Store)(nil)
)

// contextTTL bounds a cached context even if an invalidation is lost.
const contextTTL = time.Hour

// memoryItem is a memory. A cached context nests the same struct without
// keys (hence omitempty on them).
type memoryItem struct {
	PK         string    `dynamodbav:"pk,omitempty"`
	SK         string    `dynamodbav:"sk,omitempty"`
	Type       string    `dynamodbav:"type,omitempty"`
	ID         string    `dynamodbav:"id"`
	Author     string    `dynamodbav:"author"`
	MemoryType string    `dynamodbav:"memory_type"`
	Visibility string    `dynamodbav:"visibility"`
	Agents     []string  `dynamodbav:"agents,omitempty"`
	UserID     string    `dynamodbav:"user_id,omitempty"`
	Content    string    `dynamodbav:"content"`
	Source     string    `dynamodbav:"source"`
	CreatedAt  time.Time `dynamodbav:"created_at"`
}

// memoryValue is m as a nested value (no keys).
func memoryValue(m memory.Memory) memoryItem {
	return memoryItem{
		ID: m.ID, Author: m.Author, MemoryType: m.Type, Visibility: m.Visibility, Agents: m.Agents, UserID: m.UserID,
		Content: m.Content, Source: m.Source, CreatedAt: m.CreatedAt,
	}
}

// ToMemoryItem is the stored form of a memory; turns, reports and
// consultations write one in their transactions.
func ToMemoryItem(m memory.Memory) memoryItem {
	it := memoryValue(m)
	it.PK, it.SK, it.Type = dynamo.TeamPK(m.TeamID), dynamo.MemorySK(m.ID), "memory"
	return it
}

func (it memoryItem) toMemory() memory.Memory {
	return memory.Memory{
		ID: it.ID, Author: it.Author, Type: it.MemoryType, Visibility: it.Visibility, Agents: it.Agents, UserID: it.UserID,
		Content: it.Content, Source: it.Source, CreatedAt: it.CreatedAt,
	}
}

// contextItem is an agent's cached memory context.
type contextItem struct {
	PK          string       `dynamodbav:"pk"`
	SK          string       `dynamodbav:"sk"`
	Type        string       `dynamodbav:"type"`
	ExpiresAt   int64        `dynamodbav:"expires_at"`
	Agent       string       `dynamodbav:"agent"`
	Shared      []memoryItem `dynamodbav:"shared"`
	UserProfile []memoryItem `dynamodbav:"user_profile"`
	Private     []memoryItem `dynamodbav:"private"`
	BuiltAt     time.Time    `dynamodbav:"built_at"`
}

func memoryValues(list []memory.Memory) []memoryItem {
	if list == nil {
		return nil
	}
	out := make([]memoryItem, len(list))
	for i, m := range list {
		out[i] = memoryValue(m)
	}
	return out
}

func memories(list []memoryItem) []memory.Memory {
	if list == nil {
		return nil
	}
	out := make([]memory.Memory, len(list))
	for i, it := range list {
		out[i] = it.toMemory()
	}
	return out
}

func toContextItem(teamID string, c memory.Context) contextItem {
	return contextItem{
		PK: dynamo.TeamPK(teamID), SK: dynamo.ContextSK(c.Agent), Type: "memory_context", ExpiresAt: dynamo.TTL(c.BuiltAt.Add(contextTTL)),
		Agent: c.Agent, Shared: memoryValues(c.Shared), UserProfile: memoryValues(c.UserProfile),
		Private: memoryValues(c.Private), BuiltAt: c.BuiltAt,
	}
}

func (it contextItem) toContext() memory.Context {
	return memory.Context{
		Agent: it.Agent, Shared: memories(it.Shared), UserProfile: memories(it.UserProfile),
		Private: memories(it.Private), BuiltAt: it.BuiltAt,
	}
}

// epochItem is the team's memory invalidation counter, written only by ADD.
type epochItem struct {
	PK     string `dynamodbav:"pk"`
	SK     string `dynamodbav:"sk"`
	TeamID string `dynamodbav:"team_id"`
	Epoch  int    `dynamodbav:"epoch"`
}

// PutMemory implements memory.Store.
func (s *Store) PutMemory(ctx context.Context, m memory.Memory) error {
	item, err := dynamo.Marshal(ToMemoryItem(m))
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	if _, err := s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: item, ConditionExpression: dynamo.CondNew}); err != nil {
		return dynamo.Internal(err, "PutItem")
	}
	return nil
}

// RecentMemories implements memory.Store.
func (s *Store) RecentMemories(ctx context.Context, teamID string, limit int) ([]memory.Memory, error) {
	return paging.Collect(limit, min(limit, paging.MaxLimit), func(p paging.Page) ([]memory.Memory, string, error) {
		return s.ListMemories(ctx, teamID, p)
	})
}

// ListMemories implements memory.Store, newest first.
func (s *Store) ListMemories(ctx context.Context, teamID string, p paging.Page) ([]memory.Memory, string, error) {
	list := []memory.Memory{}
	next, err := s.QueryPage(ctx, dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.PrefixMemory, false), "memories:"+teamID, p, func(m map[string]types.AttributeValue) error {
		var it memoryItem
		err := dynamo.Unmarshal(m, &it)
		list = append(list, it.toMemory())
		return err
	})
	return list, next, err
}

// GetContext implements memory.Store.
func (s *Store) GetContext(ctx context.Context, teamID, agent string) (memory.Context, bool, error) {
	m, err := s.GetItem(ctx, dynamo.Key(dynamo.TeamPK(teamID), dynamo.ContextSK(agent)))
	if err != nil {
		return memory.Context{}, false, err
	}
	if m == nil {
		return memory.Context{}, false, nil
	}
	var it contextItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return memory.Context{}, false, dynamo.Internal(err, "unmarshal")
	}
	c := it.toContext()
	// An expired entry TTL has not removed yet is a miss.
	if time.Since(c.BuiltAt) > contextTTL {
		return memory.Context{}, false, nil
	}
	return c, true, nil
}

// MemoryEpoch implements memory.Store.
func (s *Store) MemoryEpoch(ctx context.Context, teamID string) (int, error) {
	m, err := s.GetItem(ctx, dynamo.Key(dynamo.TeamPK(teamID), dynamo.SKMemEpoch))
	if err != nil {
		return 0, err
	}
	var it epochItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return 0, dynamo.Internal(err, "unmarshal")
	}
	return it.Epoch, nil
}

// PutContext implements memory.Store.
func (s *Store) PutContext(ctx context.Context, teamID string, c memory.Context, epoch int) (bool, error) {
	unchanged := dynamo.Name("epoch").AttributeNotExists()
	if epoch > 0 {
		unchanged = dynamo.Name("epoch").Equal(dynamo.Value(epoch))
	}
	tx := s.Txn()
	tx.Check(dynamo.RoleEpoch, dynamo.Key(dynamo.TeamPK(teamID), dynamo.SKMemEpoch), unchanged)
	tx.Put(dynamo.RoleContext, toContextItem(teamID, c), expression.ConditionBuilder{})
	err := tx.Run(ctx)
	if _, ok := dynamo.AsCanceled(err); ok {
		return false, nil // memories changed while it was built: do not cache
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// DropContexts is DropContexts inside a transaction: the epoch bumped and
// each agent's cached context deleted, with the transaction's other writes.
func DropContexts(t *dynamo.Txn, teamID string, agentSlugs []string) {
	t.Update(dynamo.RoleEpoch, dynamo.Key(dynamo.TeamPK(teamID), dynamo.SKMemEpoch),
		expression.Set(dynamo.Name("team_id"), dynamo.Value(teamID)).Add(dynamo.Name("epoch"), dynamo.Value(1)), expression.ConditionBuilder{})
	seen := map[string]bool{}
	for _, a := range agentSlugs {
		if !seen[a] {
			seen[a] = true
			t.Add(dynamo.RoleContext, types.TransactWriteItem{Delete: &types.Delete{TableName: &t.Store.Table, Key: dynamo.Key(dynamo.TeamPK(teamID), dynamo.ContextSK(a))}})
		}
	}
}

// DropContexts implements memory.Store: the epoch bumped (so contexts
// being built now are not cached) and the cached contexts deleted, in one
// transaction (one call for a team of up to 99 agents, not one per agent;
// a larger team's remaining deletes follow in transactions of 100).
func (s *Store) DropContexts(ctx context.Context, teamID string, agentSlugs []string) error {
	first := agentSlugs[:min(len(agentSlugs), dynamo.MaxTransactItems-1)]
	tx := s.Txn()
	DropContexts(tx, teamID, first)
	if err := tx.RunConflicting(ctx); err != nil {
		return err
	}
	for rest := agentSlugs[len(first):]; len(rest) > 0; {
		n := min(len(rest), dynamo.MaxTransactItems)
		tx := s.Txn()
		for _, a := range rest[:n] {
			tx.Add(dynamo.RoleContext, types.TransactWriteItem{Delete: &types.Delete{TableName: &s.Table, Key: dynamo.Key(dynamo.TeamPK(teamID), dynamo.ContextSK(a))}})
		}
		if err := tx.RunConflicting(ctx); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}
