// Package taskbrief reads what an agent working on a task is told beyond
// the delegation machine's payload (worker.Brief): the task record's type,
// priority and input artifacts, and the last messages of the conversation
// the task came from. It lives apart from the worker (which imports no
// task or conversation types) and from the tasks package (which the chat
// side imports), so neither depends on the other.
package taskbrief

import (
	"context"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/team/prompts"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// What of the conversation the agent sees: its last RecentMessages
// messages, each clipped to MaxLine characters, so the prompt stays
// within the task's token budget however long the conversation is.
const (
	RecentMessages = 10
	MaxLine        = 500
	// MaxInput bounds the task's JSON input in the prompt (characters):
	// the input may be 32 KiB, the task's token budget is 4000.
	MaxInput = 2000
)

// TaskReader reads a task record (tasks.Store).
type TaskReader interface {
	GetTask(ctx context.Context, teamID, id string) (tasks.Task, error)
}

// ConversationReader reads the end of a conversation (conversations.Store).
type ConversationReader interface {
	RecentMessages(ctx context.Context, teamID, id string, n int) ([]conversations.Message, error)
}

// Reader implements worker.Briefs: one read of the task, and one of its
// conversation when it has one.
type Reader struct {
	Tasks         TaskReader
	Conversations ConversationReader
}

var _ worker.Briefs = Reader{}

// Brief implements worker.Briefs. Returns ENOTFOUND for a task that does
// not exist.
func (r Reader) Brief(ctx context.Context, p workflow.TaskInput) (worker.Brief, error) {
	t, err := r.Tasks.GetTask(ctx, p.TeamID, p.TaskID)
	if err != nil {
		return worker.Brief{}, err
	}
	b := worker.Brief{Type: t.Type, Priority: t.Priority, InputArtifacts: t.InputArtifacts, CostCapUSD: t.CostCapUSD,
		Input: clip.Clip(string(t.Input), MaxInput), ConversationID: t.ConversationID, UserID: t.UserID}
	if t.ConversationID == "" || r.Conversations == nil {
		return b, nil
	}
	msgs, err := r.Conversations.RecentMessages(ctx, p.TeamID, t.ConversationID, RecentMessages)
	if err != nil {
		return worker.Brief{}, err
	}
	for _, m := range msgs {
		author := m.Role
		if m.Role == conversations.AuthorAssistant && m.Agent != "" {
			author = m.Agent
		}
		b.Conversation = append(b.Conversation, prompts.Line{Author: author, Content: clip.Clip(m.Content, MaxLine)})
	}
	return b, nil
}
