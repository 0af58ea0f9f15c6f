package dynamo

import (
	"context"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/tasks"
)

// loadItem is an agent's counters. It is written only by updates (ADD
// moves a counter atomically inside the transactions that change it), so it
// has no toItem; an agent nobody counted yet has no item.
type loadItem struct {
	PK                  string  `dynamodbav:"pk"`
	SK                  string  `dynamodbav:"sk"`
	TeamID              string  `dynamodbav:"team_id"`
	AgentSlug           string  `dynamodbav:"agent_slug"`
	ActiveTasks         int     `dynamodbav:"active_tasks"`
	ActiveConversations int     `dynamodbav:"active_conversations"`
	LatencyMS           float64 `dynamodbav:"latency_ms"`
}

// loadUpdate names the load item's agent and team, which every update of it
// sets so that it reads whole whichever update created it.
func loadUpdate(teamID, slug string) expression.UpdateBuilder {
	return expression.Set(name("team_id"), value(teamID)).Set(name("agent_slug"), value(slug))
}

// convCounter moves an agent's open-conversation count by delta.
func (t *txn) convCounter(teamID, slug string, delta int) {
	t.update(roleCounter, key(teamPK(teamID), loadSK(slug)),
		loadUpdate(teamID, slug).Add(name("active_conversations"), value(delta)), expression.ConditionBuilder{})
}

// moveCurrent moves the open-conversation count from the conversation's
// previous current agent to its new one, and sets the reply latency of the
// agents in latency (nil: none). An agent's load item is written once
// whatever changes on it: a transaction may not touch an item twice.
func (t *txn) moveCurrent(teamID, prev, cur string, latency map[string]float64) {
	delta := map[string]int{}
	if prev != cur {
		if prev != "" {
			delta[prev]--
		}
		if cur != "" {
			delta[cur]++
		}
	}
	slugs := make([]string, 0, len(delta)+len(latency))
	for slug := range delta {
		slugs = append(slugs, slug)
	}
	for slug := range latency {
		if _, ok := delta[slug]; !ok {
			slugs = append(slugs, slug)
		}
	}
	sort.Strings(slugs)
	for _, slug := range slugs {
		u := loadUpdate(teamID, slug)
		if d := delta[slug]; d != 0 {
			u = u.Add(name("active_conversations"), value(d))
		}
		if ms, ok := latency[slug]; ok {
			u = u.Set(name("latency_ms"), value(ms))
		}
		t.update(roleCounter, key(teamPK(teamID), loadSK(slug)), u, expression.ConditionBuilder{})
	}
}

// takeSlot increments the assignee's active-task counter unless it is at the
// limit, and checks (same transaction) that the assignee is active.
func (t *txn) takeSlot(teamID, slug string) {
	t.update(tasks.ItemSlot, key(teamPK(teamID), loadSK(slug)),
		loadUpdate(teamID, slug).Add(name("active_tasks"), value(1)),
		name("active_tasks").AttributeNotExists().Or(name("active_tasks").LessThan(value(tasks.MaxActivePerAgent))))
	t.check(tasks.ItemAssignee, key(teamPK(teamID), agentSK(slug)), name("status").Equal(value("active")))
}

// releaseSlot gives a slot back.
func (t *txn) releaseSlot(teamID, slug string) {
	t.update(roleRelease, key(teamPK(teamID), loadSK(slug)), expression.Add(name("active_tasks"), value(-1)), expression.ConditionBuilder{})
}

// AgentLoad implements tasks.Store.
func (s *Store) AgentLoad(ctx context.Context, teamID, slug string) (int, error) {
	m, err := s.getItem(ctx, key(teamPK(teamID), loadSK(slug)))
	if err != nil {
		return 0, err
	}
	var it loadItem
	if err := unmarshal(m, &it); err != nil {
		return 0, internal(err, "unmarshal")
	}
	return it.ActiveTasks, nil
}

// AgentLoads returns every agent's counters (the expert gate's load
// signal).
func (s *Store) AgentLoads(ctx context.Context, teamID string) (map[string]routing.Load, error) {
	out := map[string]routing.Load{}
	err := s.queryAll(ctx, prefixQuery(teamPK(teamID), prefixLoad, true), func(m map[string]types.AttributeValue) error {
		var it loadItem
		if err := unmarshal(m, &it); err != nil {
			return err
		}
		if it.AgentSlug == "" {
			it.AgentSlug = strings.TrimPrefix(it.SK, prefixLoad)
		}
		out[it.AgentSlug] = routing.Load{ActiveTasks: max(0, it.ActiveTasks), ActiveConversations: max(0, it.ActiveConversations), LatencyMS: it.LatencyMS}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
