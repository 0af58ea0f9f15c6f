// Package storetest is the contract of the store ports the domain services
// rely on for their invariants: the conditions each write is refused on
// (named by the item whose condition failed), what a refused write leaves
// (nothing), and the order lists come back in. One suite runs against every
// implementation: the in-memory double (shared/testkit/memstore, for the domain
// packages' unit tests) and the DynamoDB adapter on DynamoDB Local
// (localstack/cloud, in `make test`), so the double cannot drift from the
// database the functions use. A condition removed from either fails it.
//
// Every test works in a team of its own, so one store (one table) may serve
// them all, in parallel.
package storetest

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/a2a/server"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/budget"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/consultations"
	"github.com/conclave-ai/conclave/shared/work/plans"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// Stores are the ports under contract, as one implementation provides them
// (one value may implement several).
type Stores struct {
	Teams         teams.Store
	Agents        agents.Store
	Tasks         tasks.Store
	Approvals     approvals.Store
	Conversations conversations.Store
	Sessions      sessions.Store
	Consultations consultations.Store
	Budgets       budget.Store
	// Clipboard is the tool packs' clipboard; nil skips its contract.
	Clipboard toolpacks.ClipboardStore
	// Remotes are the MCP packs; nil skips their contract.
	Remotes toolpacks.RemoteStore
	// Push are the A2A push configs; nil skips their contract.
	Push server.PushConfigs
	// Messages are the agent messages; nil skips their contract.
	Messages messaging.Store
	// Streams reads the streams the writes of sessions, conversations
	// and plans store their events on; nil skips the streams' contract.
	Streams streams.Reader
	// Results posts work's results into conversations; nil skips the
	// conversation stream's part of that contract.
	Results ResultPoster
	// Plans are the compound plans; nil skips the plan stream's part.
	Plans plans.Store
}

// Run runs the contract against the stores open returns (called once per
// test; it may return the same stores each time).
func Run(t *testing.T, open func(t *testing.T) Stores) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, f *fixture)
	}{
		{"tasks/create takes one of the assignee's slots, up to the limit", taskSlots},
		{"tasks/concurrent creates for one agent: exactly the limit", taskSlotsConcurrent},
		{"tasks/create needs an active assignee", taskAssignee},
		{"tasks/create of an id that exists", taskExists},
		{"tasks/create names a conversation of the team", taskConversation},
		{"tasks/create by an agent names an existing agent", taskCreator},
		{"tasks/a child needs its parent as read", taskParent},
		{"tasks/a child needs budget left in its collaboration", taskRoot},
		{"tasks/a change is conditioned on the version read", taskVersion},
		{"tasks/a change is conditioned on the statuses it leaves", taskFrom},
		{"tasks/slots move with the status", taskSlotMoves},
		{"tasks/work items hold no slot, a place in their assignee's queue", taskWorkItems},
		{"tasks/ending a blocked task ends its pending approvals only", taskEndsApprovals},
		{"tasks/events in order, due tasks by deadline", taskOrder},
		{"tasks/JSON payloads read back byte for byte, absent ones absent", taskPayloads},
		{"tasks/an agent's queue: queued work items by priority, then age", taskQueue},
		{"tasks/due entries, the overdue flag, the escalation and its resolution", taskDue},
		{"approvals/registered once, decided once", approvalOnce},
		{"approvals/listed newest first", approvalOrder},
		{"sessions/created once, written from the version read", sessionOnce},
		{"sessions/charges stop at the cap", sessionBudget},
		{"sessions/the trace in order", sessionTrace},
		{"agents/slugs, versions, the default agent", agentConditions},
		{"agents/skills read back whole; the registry pages by agent", agentSkills},
		{"teams/keys revoked once, by their team", keyConditions},
		{"teams/the A2A id: given at creation, or once to an older team (8 racing first uses), resolving to its team", a2aIDOnce},
		{"consultations/three active per requester", consultationLimit},
		{"budget/reservations fit the month's limit, to the nano", budgetLimit},
		{"budget/40 racing reservations: exactly those that fit", budgetConcurrent},
		{"budget/usage counters by day and attribution; warned once", budgetUsage},
		{"clipboard/by team, scope and key; replaced; gone once expired", clipboardScopes},
		{"toolpacks/MCP packs: created once, replaced, by team, deleted", remotePacks},
		{"toolpacks/16 racing creates: exactly the cap", remotePacksConcurrent},
		{"interop/push configs: by team and task, deleted once, five per task", pushConfigs},
		{"interop/12 racing push configs: exactly five", pushConfigsConcurrent},
		{"conversations/a turn sent again under its Idempotency-Key is replayed, not stored twice (6 racing)", turnReplay},
		{"idempotency/sessions (6 racing), tasks and consultations created once under a key", keyedCreates},
		{"messaging/a message sent again under its Idempotency-Key is replayed, not stored twice", messageReplay},
		{"streams/a session's changes are its stream 1 … n, resumable, refused ones absent, the team's own", sessionStream},
		{"streams/6 racing stages of a session: one number each, none skipped", sessionStreamRace},
		{"streams/6 racing results and a turn into a conversation: one number per message; refusals write none", convStream},
		{"streams/a plan's start, step and end on its stream; a stale write none", planStream},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, open(t))
			if strings.HasPrefix(c.name, "streams/") && f.Streams == nil {
				t.Skip("no stream reader")
			}
			c.run(t, f)
		})
	}
}

// fixture is a fresh team with agents ann, bob and cat on the stores, and the
// services that write well-formed records.
type fixture struct {
	Stores
	team  string
	tasks *tasks.Service
}

func newFixture(t *testing.T, s Stores) *fixture {
	t.Helper()
	ctx := context.Background()
	tm, _, err := teams.NewService(s.Teams).CreateTeam(ctx, "contract")
	require.NoError(t, err)
	ag := agents.NewService(s.Agents)
	for _, slug := range []string{"ann", "bob", "cat"} {
		_, err := ag.Create(ctx, tm.ID, agents.CreateInput{Slug: slug, Name: slug,
			Skills: []agents.Skill{{Name: "work", Description: "does the contract's work", Priority: 50}}})
		require.NoError(t, err)
	}
	return &fixture{Stores: s, team: tm.ID, tasks: tasks.NewService(s.Tasks, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))}
}
