package dynamo

import (
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
)

// LoadItem is an agent's counters. It is written only by updates (ADD
// moves a counter atomically inside the transactions that change it), so it
// has no toItem; an agent nobody counted yet has no item.
type LoadItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	TeamID      string `dynamodbav:"team_id"`
	AgentSlug   string `dynamodbav:"agent_slug"`
	ActiveTasks int    `dynamodbav:"active_tasks"`
	// QueuedWork counts the agent's queued work items (tasks.Load.Queued).
	QueuedWork int `dynamodbav:"queued_work"`
	// SlotWaiters counts the tickets waiting for one of the agent's slots
	// (tasks.Ticket): a release is conditioned on none.
	SlotWaiters         int     `dynamodbav:"slot_waiters"`
	ActiveConversations int     `dynamodbav:"active_conversations"`
	LatencyMS           float64 `dynamodbav:"latency_ms"`
}

// LoadUpdate names the load item's agent and team, which every update of it
// sets so that it reads whole whichever update created it.
func LoadUpdate(teamID, slug string) expression.UpdateBuilder {
	return expression.Set(Name("team_id"), Value(teamID)).Set(Name("agent_slug"), Value(slug))
}
