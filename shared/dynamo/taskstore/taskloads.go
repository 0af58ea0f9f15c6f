package taskstore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/tasks"
)

// takeSlot increments the assignee's active-task counter unless it is at the
// limit, and checks (same transaction) that the assignee is active.
func takeSlot(t *dynamo.Txn, teamID, slug string) {
	t.Update(tasks.ItemSlot, dynamo.Key(dynamo.TeamPK(teamID), dynamo.LoadSK(slug)),
		dynamo.LoadUpdate(teamID, slug).Add(dynamo.Name("active_tasks"), dynamo.Value(1)),
		dynamo.Name("active_tasks").AttributeNotExists().Or(dynamo.Name("active_tasks").LessThan(dynamo.Value(tasks.MaxActivePerAgent))))
	t.Check(tasks.ItemAssignee, dynamo.Key(dynamo.TeamPK(teamID), dynamo.AgentSK(slug)), dynamo.Name("status").Equal(dynamo.Value("active")))
}

// releaseSlot gives a slot back.
func releaseSlot(t *dynamo.Txn, teamID, slug string) {
	t.Update(dynamo.RoleRelease, dynamo.Key(dynamo.TeamPK(teamID), dynamo.LoadSK(slug)), expression.Add(dynamo.Name("active_tasks"), dynamo.Value(-1)), expression.ConditionBuilder{})
}

// AgentLoad implements tasks.Store.
func (s *Store) AgentLoad(ctx context.Context, teamID, slug string) (int, error) {
	m, err := s.GetItem(ctx, dynamo.Key(dynamo.TeamPK(teamID), dynamo.LoadSK(slug)))
	if err != nil {
		return 0, err
	}
	var it dynamo.LoadItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return 0, dynamo.Internal(err, "unmarshal")
	}
	return it.ActiveTasks, nil
}
