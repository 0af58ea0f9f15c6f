package taskstore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// takeSlot increments the assignee's active-task counter unless it is at the
// limit, and checks (same transaction) that the assignee is active.
func takeSlot(t *dynamo.Txn, teamID, slug string) {
	t.Update(tasks.ItemSlot, dynamo.Key(dynamo.TeamPK(teamID), dynamo.LoadSK(slug)),
		dynamo.LoadUpdate(teamID, slug).Add(dynamo.Name("active_tasks"), dynamo.Value(1)),
		dynamo.Name("active_tasks").AttributeNotExists().Or(dynamo.Name("active_tasks").LessThan(dynamo.Value(tasks.MaxActivePerAgent))))
	t.Check(tasks.ItemAssignee, dynamo.Key(dynamo.TeamPK(teamID), dynamo.AgentSK(slug)), dynamo.Name("status").Equal(dynamo.Value("active")))
}

// enterQueue counts a work item into the assignee's queue unless the queue
// is full, and checks (same transaction) that the assignee is active: a
// work item takes no slot, but an agent that is paused or gone takes no
// new work either.
func enterQueue(t *dynamo.Txn, teamID, slug string) {
	t.Update(tasks.ItemQueue, dynamo.Key(dynamo.TeamPK(teamID), dynamo.LoadSK(slug)),
		dynamo.LoadUpdate(teamID, slug).Add(dynamo.Name("queued_work"), dynamo.Value(1)),
		dynamo.Name("queued_work").AttributeNotExists().Or(dynamo.Name("queued_work").LessThan(dynamo.Value(tasks.MaxQueuedPerAgent))))
	t.Check(tasks.ItemAssignee, dynamo.Key(dynamo.TeamPK(teamID), dynamo.AgentSK(slug)), dynamo.Name("status").Equal(dynamo.Value("active")))
}

// leaveQueue counts a work item out of its assignee's queue.
func leaveQueue(t *dynamo.Txn, teamID, slug string) {
	t.Update(dynamo.RoleRelease, dynamo.Key(dynamo.TeamPK(teamID), dynamo.LoadSK(slug)), expression.Add(dynamo.Name("queued_work"), dynamo.Value(-1)), expression.ConditionBuilder{})
}

// releaseSlot gives a slot back: to handoff when set (the ticket granted,
// the agent's counter unmoved), else released, conditioned on no ticket
// waiting for one (tasks.ItemWaiting) unless force.
func releaseSlot(t *dynamo.Txn, teamID, slug string, handoff *tasks.Ticket, force bool) {
	load := dynamo.Key(dynamo.TeamPK(teamID), dynamo.LoadSK(slug))
	if handoff != nil {
		grantTicket(t, *handoff)
		t.Update(dynamo.RoleRelease, load, expression.Add(dynamo.Name("slot_waiters"), dynamo.Value(-1)), expression.ConditionBuilder{})
		return
	}
	var cond expression.ConditionBuilder
	if !force {
		cond = dynamo.Name("slot_waiters").AttributeNotExists().Or(dynamo.Name("slot_waiters").LessThanEqual(dynamo.Value(0)))
	}
	t.Update(tasks.ItemWaiting, load, expression.Add(dynamo.Name("active_tasks"), dynamo.Value(-1)), cond)
}

// AgentLoad implements tasks.Store.
func (s *Store) AgentLoad(ctx context.Context, teamID, slug string) (tasks.Load, error) {
	m, err := s.GetItem(ctx, dynamo.Key(dynamo.TeamPK(teamID), dynamo.LoadSK(slug)))
	if err != nil {
		return tasks.Load{}, err
	}
	var it dynamo.LoadItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return tasks.Load{}, dynamo.Internal(err, "unmarshal")
	}
	return tasks.Load{Active: it.ActiveTasks, Queued: it.QueuedWork}, nil
}
