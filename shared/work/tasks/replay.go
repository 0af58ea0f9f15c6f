package tasks

import "context"

// RefKind is the kind of a task's idempotency reference: POST /v1/tasks
// scopes its request's key to it, not the tasks a turn delegates or a
// report runs on.
const RefKind = "task"

// replay answers a create sent again under the Idempotency-Key of task id
// (its answer was lost): that task as it is now.
func (s *Service) replay(ctx context.Context, teamID, id string, err error) (Task, error) {
	if err != nil {
		return Task{}, err
	}
	return s.Get(ctx, teamID, id)
}
