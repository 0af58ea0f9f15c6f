package tasks

import (
	"context"
	"slices"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// List returns tasks newest first, or with Sort SortPriority an agent's
// queue in queue order (QueueOrder): that sort lists the queued work
// items of one assignee, so it takes assignee and status=queued and no
// other filter (EINVALID naming sort otherwise). A ConversationID lists
// the conversation's tasks, with Status, Agent and Assignee but not
// Parent (EINVALID naming conversation_id), and must be a conversation
// id (EINVALID); another team's lists none.
func (s *Service) List(ctx context.Context, teamID string, f Filter, p paging.Page) ([]Task, string, error) {
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		return nil, "", apperr.Invalid("status", "status must be one of queued, running, blocked, completed, failed, canceled, timed_out")
	}
	for name, v := range map[string]string{"agent": f.Agent, "assignee": f.Assignee} {
		if v != "" && !agents.ValidSlug(v) {
			return nil, "", apperr.Invalid(name, "%s must be an agent slug", name)
		}
	}
	if f.ConversationID != "" {
		// A list filter, not a reference: a malformed id is a bad
		// request; another team's conversation lists nothing.
		if !ids.Valid("conv", f.ConversationID) {
			return nil, "", apperr.Invalid("conversation_id", "conversation_id must be a conversation id (conv_…)")
		}
		if f.Parent != "" {
			// Each is its own index; a sub-task inherits its parent's
			// conversation, so the parent's listing is the conversation's.
			return nil, "", apperr.Invalid("conversation_id", "conversation_id and parent_task_id are not taken together: list one of them")
		}
	}
	switch f.Sort {
	case "":
		return s.Store.ListTasks(ctx, teamID, f, p)
	case SortPriority:
		if f.Assignee == "" || f.Status != Queued || f.Agent != "" || f.Parent != "" || f.ConversationID != "" || f.UserID != "" {
			return nil, "", apperr.Invalid("sort", "sort=priority lists an agent's queue: it takes assignee and status=queued, and no agent, parent_task_id, conversation_id or person")
		}
		return s.Store.QueuedWork(ctx, teamID, f.Assignee, p)
	default:
		return nil, "", apperr.Invalid("sort", "sort must be priority or empty (newest first)")
	}
}
