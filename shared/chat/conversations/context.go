package conversations

import (
	"context"

	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/team/prompts"
)

// An agent's prompt is the conversation and what the conversation does
// not hold: the agent's unread inbox, its memory context and what the
// skill that chose it loads (its recent memories, its open tasks). The
// service takes one port for all of it, ContextSources, and reads it once
// per agent asked, before the prompt is written: the prompt is then
// assembled in one place from one value, not in a round trip to each
// source between its lines, and the turn depends on one interface
// instead of a field per source. Sources is that port over the services
// that hold each part; the open tasks come from the work wing, which
// chat comes before, so they reach it converted (prompts.OpenTask) by
// the wire layer, and chat imports nothing of work.

// ContextParts names the parts of an agent's context to read: the inbox
// and the memory context for every reply, the loaders' parts when the
// skill that chose the agent names them.
type ContextParts struct {
	// Inbox: the agent's unread messages.
	Inbox bool
	// Memory: the agent's memory context.
	Memory bool
	// RecentMemories: the recent_memories loader's read.
	RecentMemories bool
	// OpenTasks: the open_tasks loader's read.
	OpenTasks bool
	// Person is the user the agent answers (the conversation's owner; ""
	// for a key's own): whose user profile the memory parts read
	// (memory.Context.For).
	Person string
}

// PromptContext is what an agent's prompt holds beyond the conversation.
// A part that could not be read carries its error beside it (and is
// empty, or what its source returned with the error): the agent answers
// without it and the service logs why.
type PromptContext struct {
	// Inbox is the agent's unread messages, shown in its team block and
	// marked read once a turn keeping its reply commits.
	Inbox    []messaging.Message
	InboxErr error
	// Memory is the agent's memory context: the user's profile, what the
	// team shares and its own memories.
	Memory    memory.Context
	MemoryErr error
	// RecentMemories are the agent's newest memories it may see, at most
	// prompts.LoaderItems (the recent_memories loader).
	RecentMemories    []memory.Memory
	RecentMemoriesErr error
	// OpenTasks are the agent's unfinished tasks (the open_tasks loader).
	OpenTasks    []prompts.OpenTask
	OpenTasksErr error
}

// ContextSources reads an agent's context for its prompt.
type ContextSources interface {
	// Gather reads the parts of agent's context that parts names, each
	// from its source; a part not named, or without a source, is empty.
	Gather(ctx context.Context, teamID, agent string, parts ContextParts) PromptContext
}

// MemoryContexts builds an agent's memory context for the person it
// answers (memory.Service).
type MemoryContexts interface {
	ForPerson(ctx context.Context, teamID, agent, person string) (memory.Context, error)
}

// InboxReader reads the messages addressed to an agent it has not read
// (messaging.Service; one Query).
type InboxReader interface {
	Unread(ctx context.Context, teamID, agent string) ([]messaging.Message, error)
}

// MemoryLog reads the team's memories newest first: the recent_memories
// loader (memory's store, as the memory context is built from).
type MemoryLog interface {
	RecentMemories(ctx context.Context, teamID string, limit int) ([]memory.Memory, error)
}

// OpenTasks lists an agent's unfinished tasks, newest first, among its
// newest paging.DefaultLimit (one Query): the open_tasks loader, over the
// store behind GET /v1/tasks (the wire layer converts its tasks).
type OpenTasks interface {
	OpenTasks(ctx context.Context, teamID, agent string) ([]prompts.OpenTask, error)
}

// Sources is the ContextSources of the services that hold each part. A
// source left nil is not read: its part is empty.
type Sources struct {
	// Memories builds the memory context (PromptContext.Memory).
	Memories MemoryContexts
	// Inbox reads the unread messages (PromptContext.Inbox).
	Inbox InboxReader
	// MemoryLog reads the team's newest memories, the agent's among which
	// are its recent memories (PromptContext.RecentMemories).
	MemoryLog MemoryLog
	// Tasks lists the open tasks (PromptContext.OpenTasks).
	Tasks OpenTasks
}

var _ ContextSources = Sources{}

// Gather implements ContextSources: one read per part named, in the
// order the prompt shows them.
func (src Sources) Gather(ctx context.Context, teamID, agent string, parts ContextParts) PromptContext {
	var pc PromptContext
	if parts.Inbox && src.Inbox != nil {
		pc.Inbox, pc.InboxErr = src.Inbox.Unread(ctx, teamID, agent)
	}
	if parts.Memory && src.Memories != nil {
		pc.Memory, pc.MemoryErr = src.Memories.ForPerson(ctx, teamID, agent, parts.Person)
	}
	if parts.RecentMemories && src.MemoryLog != nil {
		pc.RecentMemories, pc.RecentMemoriesErr = recentMemories(ctx, src.MemoryLog, teamID, agent, parts.Person)
	}
	if parts.OpenTasks && src.Tasks != nil {
		pc.OpenTasks, pc.OpenTasksErr = src.Tasks.OpenTasks(ctx, teamID, agent)
	}
	return pc
}

// recentMemoryScan is how many of the team's newest memories the
// recent_memories loader reads to find the agent's (one Query).
const recentMemoryScan = 50

func recentMemories(ctx context.Context, log MemoryLog, teamID, agent, person string) ([]memory.Memory, error) {
	all, err := log.RecentMemories(ctx, teamID, recentMemoryScan)
	if err != nil {
		return nil, err
	}
	var out []memory.Memory
	for _, m := range all {
		if m.VisibleTo(agent) && m.ReadableFor(person) && len(out) < prompts.LoaderItems {
			out = append(out, m)
		}
	}
	return out, nil
}
