// Package storetest is the contract of the store ports the domain services
// rely on for their invariants: the conditions each write is refused on
// (named by the item whose condition failed), what a refused write leaves
// (nothing), the order lists come back in, paging, and what one team reads
// of another's (nothing). One suite runs against every implementation: the
// in-memory fakes (shared/testkit/memstore, for the domain packages' unit
// tests) and the DynamoDB adapters on DynamoDB Local (localstack/cloud, in
// `make test`), so the fakes cannot drift from the database the functions
// use. A condition removed from either fails it.
//
// Every store method is called by a case, or exempt with the reason
// (TestEveryStoreMethodIsUnderContract, coverage_test.go): a method no case
// calls is one the fakes may get wrong unnoticed.
//
// Every test works in a team of its own, so one store (one table) may serve
// them all, in parallel.
package storetest

import (
	"context"
	"io"
	"log/slog"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/a2a/server"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/consumers"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/evaluations"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/routing/suggestions"
	"github.com/conclave-ai/conclave/shared/team/activity"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/authorizer"
	"github.com/conclave-ai/conclave/shared/team/budget"
	"github.com/conclave-ai/conclave/shared/team/identity"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/consultations"
	"github.com/conclave-ai/conclave/shared/work/plans"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/results"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// Stores are the ports under contract, as one implementation provides them
// (one value may implement several). Every field is required: a port left
// out would be policed on one side only (Run fails on a nil one).
type Stores struct {
	Teams   teams.Store
	Agents  agents.Store
	Tasks   tasks.Store
	Tickets tasks.TicketStore
	// Approvals are tool-call approvals and the teams' approval policies.
	Approvals     approvals.Store
	Conversations conversations.Store
	// Decisions are the routing decisions a turn writes.
	Decisions cascade.Store
	Sessions  sessions.Store
	// Consultations are the consultations and escalations, with the
	// directory, ratings and memories the consultation service reads.
	Consultations consultations.Backend
	Budgets       budget.Store
	// Clipboard is the tool packs' clipboard.
	Clipboard toolpacks.ClipboardStore
	// MCPPacks are the teams' MCP packs.
	MCPPacks toolpacks.MCPPackStore
	// Push are the A2A push configs.
	Push server.PushConfigs
	// Messages are the agent messages and inboxes.
	Messages messaging.Store
	// Memories are the memories and the agents' cached memory contexts.
	Memories memory.Store
	// Reports are the reports.
	Reports reports.Store
	// Gate is what the expert gate reads: active agents, their loads and
	// the ratings of their replies.
	Gate expertgate.Source
	// Streams reads the streams the writes of sessions, conversations
	// and plans store their events on.
	Streams streams.Reader
	// Results reads work and posts its results into conversations.
	Results results.Store
	// Plans are the compound plans.
	Plans plans.Store
	// Requests count a team's requests per second (the rate limit).
	Requests authorizer.RequestCounter
	// Records are the idempotent POSTs' records.
	Records idempotency.Store
	// Attempts count a queued message's failed deliveries.
	Attempts consumers.Attempts
	// Activity is the team's activity log.
	Activity activity.Store
	// Vectors are the expert gate's skill vectors.
	Vectors expertgate.VectorStore
	// Classifiers are the teams' fitted classifiers the gate scores with.
	Classifiers expertgate.ClassifierStore
	// Evaluations are the teams' routing evaluations.
	Evaluations evaluations.Store
	// Suggestions are the agents' example suggestions.
	Suggestions suggestions.Store
	// Work lists the work conversations started (tasks, sessions,
	// plans, reports and consultations, as their stores wrote them).
	Work conversations.WorkLister
	// Identity are the teams' OpenID Connect providers and the (issuer,
	// audience) pairs they hold.
	Identity identity.Store
}

// complete fails t naming each port s leaves out.
func (s Stores) complete(t *testing.T) {
	t.Helper()
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		require.False(t, v.Field(i).IsNil(), "the contract's %s port is nil: every port runs on every implementation", v.Type().Field(i).Name)
	}
}

// contractCase is one case of the contract: a name ("<port>/<what it
// asserts>") and its run on a fresh fixture.
type contractCase struct {
	name string
	run  func(t *testing.T, f *fixture)
}

// cases are the contract's cases, by port.
var cases = []contractCase{
	{"tasks/create takes one of the assignee's slots, up to the limit", taskSlots},
	{"tasks/concurrent creates for one agent: exactly the limit", taskSlotsConcurrent},
	{"tasks/create needs an active assignee", taskAssignee},
	{"tasks/the person a task works for, its delegations' too", taskUser},
	{"sessions and reports/the person each was started for reads back", startedForUser},
	{"plans/a person's listed alone, a page at a time; a key's own is no one's", plansOwned},
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
	{"budget/a person's month fits per_user, to the nano, with the team's", budgetUserLimit},
	{"budget/a person's racing reservations: exactly those that fit", budgetUserConcurrent},
	{"clipboard/by team, scope and key; replaced; gone once expired", clipboardScopes},
	{"toolpacks/MCP packs: created once, replaced, by team, deleted", mcpPacks},
	{"toolpacks/16 racing creates: exactly the cap", mcpPacksConcurrent},
	{"a2a/push configs: by team and task, deleted once, five per task", pushConfigs},
	{"a2a/12 racing push configs: exactly five", pushConfigsConcurrent},
	{"conversations/a turn sent again under its Idempotency-Key is replayed, not stored twice (6 racing)", turnReplay},
	{"idempotency/sessions (6 racing), tasks and consultations created once under a key", keyedCreates},
	{"messaging/a message sent again under its Idempotency-Key is replayed, not stored twice", messageReplay},
	{"streams/a session's changes are its stream 1 … n, resumable, refused ones absent, the team's own", sessionStream},
	{"streams/6 racing stages of a session: one number each, none skipped", sessionStreamRace},
	{"streams/6 racing results and a turn into a conversation: one number per message; refusals write none", convStream},
	{"streams/a plan's start, step and end on its stream; a stale write none", planStream},
	{"conversations/created once; listed newest first, whole, a page at a time, by team", conversationsListed},
	{"conversations/an owner's listed alone, a page at a time; a key's own has no owner", conversationsOwned},
	{"conversations/participants join once and keep their first role; only an active one leaves; a closed conversation takes none", conversationParticipants},
	{"conversations/a close is conditioned on the version read and gives the agent's conversation back", conversationClosed},
	{"conversations/messages by id, after an id (paged), the last n", conversationMessages},
	{"conversations/agent replies only are rated, per contributing agent, newest reply first", messageRatings},
	{"conversations/handoffs in order, with their memory; a stale or conflicting one writes nothing", conversationHandoffs},
	{"decisions/by id; newest first, paged, by conversation, strategy, agent, fallback and time; recent up to a limit", decisionsLogged},
	{"reports/created once (by id and by key), read whole, listed newest first, filtered, paged", reportsListed},
	{"reports/a save is conditioned on the version read; its memory ends the contexts it concerns, or nothing is written", reportSaved},
	{"memories/stored once; newest first, whole, paged; recent up to a limit", memoriesListed},
	{"memories/contexts cached under the epoch read, dropped by name, a miss after an hour", memoryContexts},
	{"agents/the team's agents as the memory service and the expert gate see them", teamDirectory},
	{"messaging/a message stored once, read whole by its team", messagesStored},
	{"messaging/delivered once per recipient, newest first, paged, read once", inboxDelivered},
	{"tickets/registered at the limit only, once; the line by rank and time; refreshed, dropped, listed by prefix", ticketsWait},
	{"tickets/a freed slot goes to a waiting ticket, or is refused; a granted ticket is spent or released once", ticketsGranted},
	{"teams/keys added to a team once per hash, found by hash, rotated at once, listed newest first", keyLifecycle},
	{"teams/the store gives a team its A2A id once", a2aIDGiven},
	{"teams/requests counted per team and second, each count once (12 racing)", requestCounts},
	{"idempotency/a key claimed once until it expires, its response replayed, a pending claim released", idempotencyRecords},
	{"consumers/a message's failed deliveries counted once each (8 racing), per queue and message", attemptsCounted},
	{"activity/an event recorded once; the log newest first, a page at a time", activityLogged},
	{"gate/skill vectors read back exactly, by key and by embedder; replaced, deleted; bad ones refused", skillVectors},
	{"gate/a team's classifier per embedder read back (weights to half precision, several items); an earlier fit refused, a later or equal one replaces; deleted; bad ones refused", teamClassifiers},
	{"evaluations/created once, read whole by its team; listed newest first without messages or results, paged; finished once, while running", evaluationsStored},
	{"suggestions/added once per agent and id, read by their team and agent, listed newest first, paged", suggestionsStored},
	{"suggestions/dismissed once, hidden but holding the id; deleted once, freeing it; by team and agent", suggestionsDismissed},
	{"suggestions/expired ones absent to every read and write, their ids free", suggestionsExpired},
	{"suggestions/at most max kept per agent: the oldest pushed out, at the boundary exactly", suggestionsCapped},
	{"suggestions/20 racing adds with a cap of 5: exactly 5 kept", suggestionsConcurrent},
	{"consultations/created escalated once, holding no slot; listed newest first by status and agent; escalations by status", consultationsListed},
	{"consultations/a save is conditioned on the version read, moves the counter within its bounds, creates its escalation and memory once", consultationSaved},
	{"consultations/an escalation resolved once, its answer delivered with it; a stale resolution writes nothing", escalationResolved},
	{"agents/listed by slug, a page at a time, by status", agentsListed},
	{"approvals/the team's policy: none until put, replaced whole", approvalPolicy},
	{"approvals/listed newest first, a page at a time, by status and task", approvalsPaged},
	{"sessions/listed newest first, a page at a time, by status, pattern and agent; a session's agents; due earliest first", sessionsListed},
	{"plans/listed newest first, a page at a time; due earliest first, across teams, until they end", plansListed},
	{"results/the work a result is posted for, read as its stores wrote it", resultsRead},
	{"tasks/a result a reply waits for is released to the conversation once, moving the version", taskResultReleased},
	{"tasks/the agents of a task: assignee, chain, creator", taskAgentsRead},
	{"tasks/a dropped due entry stays out until the task's status or due date changes", dueEntryDropped},
	{"conversations/the work a conversation started: five kinds newest first, a report's task left out, pages filled, by conversation and team", conversationWorkListed},
	{"tasks/a conversation's tasks newest first, by status, agent and assignee, pages filled, by conversation and team", conversationTasksListed},
	{"conversations/the conversations an agent took part in (left or not), newest first, whole, paged, by agent and team", agentConversationsListed},
	{"identity/a provider read back whole by its team and by each of its pairs; none for another team or a pair no team holds", identityProviders},
	{"identity/a pair belongs to one team: another's registration naming it is refused (IssuerAudienceTaken) and writes nothing", identityPairTaken},
	{"identity/a replace releases the pairs it no longer names, which another team may take, and keeps the rest", identityReplace},
	{"identity/8 racing replaces by one team: a stale one refused; the pairs held are exactly the provider's", identityRace},
	{"identity/8 teams racing for one pair: exactly one holds it, the others refused and holding nothing", identityPairRace},
}

// Run runs the contract against the stores open returns (called once per
// test; it may return the same stores each time).
func Run(t *testing.T, open func(t *testing.T) Stores) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			s.complete(t)
			c.run(t, newFixture(t, s))
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
