// Package server makes a team an agent of Google's Agent2Agent protocol,
// A2A 1.0 (seed 003 phase 12; docs/a2a.md): the team's agent card, built
// from its skill registry, and the protocol's task methods on the task
// model. A message is routed as a chat turn's is and becomes a Conclave
// task (the A2A task id is the Conclave task id) that runs through the
// delegation workflow with every limit of the task model; its answer is
// the task's artifact; the streaming methods follow the task as events
// (stream.go). The JSON-RPC transport, its errors and the 0.3
// compatibility are a2a-go's (shared/wire/a2afn serves them); this package
// is the a2asrv.RequestHandler behind them and links no AWS SDK.
package server

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// Tasks is the task model (tasks.Service).
type Tasks interface {
	Create(ctx context.Context, teamID string, creator tasks.Creator, in tasks.CreateInput, executeByDefault bool) (tasks.Task, error)
	Get(ctx context.Context, teamID, id string) (tasks.Task, error)
	WaitUntil(ctx context.Context, teamID, id string, d time.Duration, done func(tasks.Task) bool) (tasks.Task, error)
	List(ctx context.Context, teamID string, f tasks.Filter, p paging.Page) ([]tasks.Task, string, error)
	Cancel(ctx context.Context, teamID, id, by, reason string) (tasks.Task, error)
}

// Router chooses the agent that answers a message in a conversation, as
// a chat turn's router does (the gate's scores, continuity, the default
// agent); it returns the agent's slug.
type Router interface {
	Choose(ctx context.Context, teamID, conversationID, text string) (string, error)
}

// Conversations are the A2A contexts: a message without a contextId
// opens one, and one with a contextId must name a conversation of the
// team.
type Conversations interface {
	Open(ctx context.Context, teamID, title string) (string, error)
	// Check returns ENOTFOUND for a conversation that is not the team's.
	Check(ctx context.Context, teamID, id string) error
	// Discard closes a conversation opened for a message that was then
	// refused (best effort: a refusal leaves no open context behind).
	Discard(ctx context.Context, teamID, id string)
}

// Approvals decides the approvals a task waits on (approvals.Service).
type Approvals interface {
	Get(ctx context.Context, teamID, id string) (approvals.Approval, error)
	Decide(ctx context.Context, teamID, id, by string, in approvals.DecideInput) (approvals.Approval, error)
}

// Registry is what the card is built from.
type Registry interface {
	GetTeam(ctx context.Context, teamID string) (teams.Team, error)
	// Agents are the team's active agents.
	Agents(ctx context.Context, teamID string) ([]agents.Agent, error)
}

// Service answers the A2A methods for the team its context names (With).
type Service struct {
	Tasks         Tasks
	Router        Router
	Conversations Conversations
	Approvals     Approvals
	Registry      Registry
	// Deadline is how long SendMessage waits for the task to end before
	// answering it WORKING (the chat turn's deadline; DefaultDeadline
	// when zero). The caller's own deadline shortens it.
	Deadline time.Duration
	// Version is the card's version (the deployment's).
	Version string
	// ApprovalWait bounds the wait for an approval not written yet
	// (ApprovalRegisterWait when zero).
	ApprovalWait time.Duration
	// Push and PushPolicy offer push notifications (push.go); nil: the
	// card says pushNotifications: false and the methods refuse.
	Push       PushConfigs
	PushPolicy URLPolicy
	// StreamLimit is how long a stream follows its task
	// (DefaultStreamLimit when zero); the caller's deadline shortens it.
	StreamLimit time.Duration
	// NoTasks names the feature flag that is off when the stage runs no
	// task ("task_delegation"; "" when it runs them): a new message is
	// then refused (UnsupportedOperation naming the flag) before anything
	// is created, and the card says so. Work already accepted finishes:
	// a message to an existing task (an approval's decision) still
	// answers.
	NoTasks string
}

// DefaultDeadline is SendMessage's wait: what a chat turn waits for its
// agents (shared/chat/conversations' turn), well inside the API Gateway's 30 s.
const DefaultDeadline = 20 * time.Second

// Actor is who the task model records for what A2A clients do.
const Actor = tasks.CreatorA2A

// Endpoint is what a request is for: the team behind the A2A id it
// addressed and the agent's URLs (the card's interfaces).
type Endpoint struct {
	TeamID string
	// BaseURL is the agent's URL on the HTTP API ("" when the request
	// came through the streaming API, which does not know it).
	BaseURL string
	// StreamURL is the agent's URL on the streaming API; "" when the
	// stage has none: the card says streaming: false and the streaming
	// methods refuse.
	StreamURL string
}

type endpointKey struct{}

// With returns ctx serving e: the handler answers for e's team only.
func With(ctx context.Context, e Endpoint) context.Context {
	return context.WithValue(ctx, endpointKey{}, e)
}

func endpoint(ctx context.Context) (Endpoint, bool) {
	e, ok := ctx.Value(endpointKey{}).(Endpoint)
	return e, ok && e.TeamID != ""
}
