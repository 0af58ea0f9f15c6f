package conversationsfn

import (
	"context"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/prompts"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// TaskLister lists tasks: the store behind GET /v1/tasks.
type TaskLister interface {
	ListTasks(ctx context.Context, teamID string, f tasks.Filter, p paging.Page) ([]tasks.Task, string, error)
}

// Tasks is the source of the open_tasks loader of an agent's prompt
// (conversations.OpenTasks). Chat and the prompts come before the work
// wing and import nothing of it; here, where the two are wired together,
// the work wing's tasks become what a prompt prints of them.
type Tasks struct {
	// Store is the task store (taskstore, or memstore in tests).
	Store TaskLister
}

var _ conversations.OpenTasks = Tasks{}

// OpenTasks implements conversations.OpenTasks: the agent's unfinished
// tasks among its newest paging.DefaultLimit (one Query), newest first.
func (t Tasks) OpenTasks(ctx context.Context, teamID, agent string) ([]prompts.OpenTask, error) {
	list, _, err := t.Store.ListTasks(ctx, teamID, tasks.Filter{Assignee: agent}, paging.Page{Limit: paging.DefaultLimit})
	if err != nil {
		return nil, err
	}
	var out []prompts.OpenTask
	for _, tk := range list {
		if !tk.Status.Terminal() {
			out = append(out, prompts.OpenTask{ID: tk.ID, Title: tk.Title, Status: string(tk.Status), Priority: tk.Priority})
		}
	}
	return out, nil
}
