// Package memstore is the in-memory double of the store ports, for the
// domain packages' unit tests: a small core and one fake per store,
// mirroring shared/store (the DynamoDB core shared/store/dynamo and one
// adapter package per store), and Store, all of them on one table, for
// the tests that need a whole team.
//
// The parts live in this folder rather than beside the adapters or in a
// folder of their own because they are one double: memstore is the path
// every test already imports, and its subpackages are its parts, as the
// adapters are the parts of shared/store. memtable is the core (the
// shared table, its lock and clock, the streams and Idempotency-Key
// references the DynamoDB core serves, the helpers of paged reads, and
// the Publisher and Clock the services' tests use); each <store>fake
// implements one store's port on a memtable.Table, importing only the
// domains and the other fakes its writes touch, as each adapter imports
// only the adapters whose items its transactions write. A domain whose
// tests need only its own store builds that fake (budgetfake.New(nil))
// and links no other domain's; a change to one fake then recompiles only
// the tests that use it (or Store).
//
// Every fake enforces the invariants the DynamoDB adapter enforces with
// conditions on one transaction: a write checks all of its conditions
// first and then applies all of its changes under the table's lock, so a
// write is atomic and concurrent requests cannot break a limit, exactly as
// with TransactWriteItems. A failed condition comes back with the error
// the adapter maps the same cancellation to (apperr codes and reasons,
// *tasks.ConditionFailed naming the item). Where the adapter's behaviour
// is subtle the method says so and mirrors it; where a fake differs, the
// method's comment says how. The store contract (shared/testkit/storetest)
// holds Store and the adapters to the same cases.
//
// Values are copied in and out (documents through JSON, as the adapter
// stores them), so a caller mutating a returned value never changes what
// is stored.
package memstore

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/a2a/server"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/consumers"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/discovery"
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
	"github.com/conclave-ai/conclave/shared/testkit/memstore/activityfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/agentfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/approvalfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/budgetfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/clipfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/consultationfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/conversationfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/decisionfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/evaluationfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/expertgatefake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/identityfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/mcppackfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memoryfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/messagefake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/planfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/pushfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/reportfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/resultfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/sessionfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/suggestionfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/taskfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/teamfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/workfake"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/consultations"
	"github.com/conclave-ai/conclave/shared/work/plans"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/results"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

var (
	_ teams.Store                  = (*Store)(nil)
	_ agents.Store                 = (*Store)(nil)
	_ agents.DueCards              = (*Store)(nil)
	_ tasks.Store                  = (*Store)(nil)
	_ tasks.TicketStore            = (*Store)(nil)
	_ tasks.DueStore               = (*Store)(nil)
	_ conversations.Store          = (*Store)(nil)
	_ conversations.MessageTail    = (*Store)(nil)
	_ conversations.AgentDirectory = (*Store)(nil)
	_ conversations.Replays        = (*Store)(nil)
	_ conversations.WorkLister     = (*Store)(nil)
	_ cascade.Store                = (*Store)(nil)
	_ messaging.Store              = (*Store)(nil)
	_ messaging.Directory          = (*Store)(nil)
	_ memory.Store                 = (*Store)(nil)
	_ memory.Directory             = (*Store)(nil)
	_ discovery.Directory          = (*Store)(nil)
	_ expertgate.Source            = (*Store)(nil)
	_ reports.Store                = (*Store)(nil)
	_ results.Store                = (*Store)(nil)
	_ sessions.Store               = (*Store)(nil)
	_ consultations.Backend        = (*Store)(nil)
	_ approvals.Store              = (*Store)(nil)
	_ budget.Store                 = (*Store)(nil)
	_ toolpacks.ClipboardStore     = (*Store)(nil)
	_ toolpacks.MCPPackStore       = (*Store)(nil)
	_ server.PushConfigs           = (*Store)(nil)
	_ plans.Store                  = (*Store)(nil)
	_ idempotency.Refs             = (*Store)(nil)
	_ authorizer.RequestCounter    = (*Store)(nil)
	_ idempotency.Store            = (*Store)(nil)
	_ consumers.Attempts           = (*Store)(nil)
	_ activity.Store               = (*Store)(nil)
	_ expertgate.VectorStore       = (*Store)(nil)
	_ expertgate.ClassifierStore   = (*Store)(nil)
	_ evaluations.Store            = (*Store)(nil)
	_ suggestions.Store            = (*Store)(nil)
	_ identity.Store               = (*Store)(nil)
)

// Store is every fake on one table: a whole team's stores, for the tests
// that need them all (and for those written before the split). Its Now
// is the table's clock (memtable.Table.Now); set it before use. The zero
// value is not usable; call New. It is safe for concurrent use.
type Store struct {
	*memtable.Table
	*teamfake.Teams
	*agentfake.Agents
	*taskfake.Tasks
	*conversationfake.Conversations
	*decisionfake.Decisions
	*expertgatefake.Gate
	*memoryfake.Memories
	*messagefake.Messages
	*reportfake.Reports
	*resultfake.Results
	*sessionfake.Sessions
	*consultationfake.Consultations
	*approvalfake.Approvals
	*budgetfake.Budgets
	*clipfake.Clipboard
	*mcppackfake.Packs
	*pushfake.PushConfigs
	*planfake.Plans
	*activityfake.Activity
	*evaluationfake.Evaluations
	*suggestionfake.Suggestions
	*workfake.Work
	*identityfake.Providers
}

// New returns an empty store on the wall clock.
func New() *Store {
	tb := memtable.New()
	return &Store{
		Table: tb, Teams: teamfake.New(tb), Agents: agentfake.New(tb), Tasks: taskfake.New(tb),
		Conversations: conversationfake.New(tb), Decisions: decisionfake.New(tb), Gate: expertgatefake.New(tb),
		Memories: memoryfake.New(tb), Messages: messagefake.New(tb), Reports: reportfake.New(tb), Results: resultfake.New(tb),
		Sessions: sessionfake.New(tb), Consultations: consultationfake.New(tb), Approvals: approvalfake.New(tb),
		Budgets: budgetfake.New(tb), Clipboard: clipfake.New(tb), Packs: mcppackfake.New(tb), PushConfigs: pushfake.New(tb),
		Plans: planfake.New(tb), Activity: activityfake.New(tb), Evaluations: evaluationfake.New(tb),
		Suggestions: suggestionfake.New(tb), Work: workfake.New(tb), Providers: identityfake.New(tb),
	}
}

// The methods several fakes declare (the results' store reads tasks,
// sessions and reports; the conversations' store replays decisions; the
// consultations' reads memories) are the owning store's.

// GetTask implements tasks.Store and results.Store (taskfake's).
func (s *Store) GetTask(ctx context.Context, teamID, id string) (tasks.Task, error) {
	return s.Tasks.GetTask(ctx, teamID, id)
}

// GetSession implements sessions.Store and results.Store (sessionfake's).
func (s *Store) GetSession(ctx context.Context, teamID, id string) (sessions.Session, error) {
	return s.Sessions.GetSession(ctx, teamID, id)
}

// GetReport implements reports.Store and results.Store (reportfake's).
func (s *Store) GetReport(ctx context.Context, teamID, id string) (reports.Report, error) {
	return s.Reports.GetReport(ctx, teamID, id)
}

// GetDecision implements cascade.Store and conversations.Replays
// (decisionfake's).
func (s *Store) GetDecision(ctx context.Context, teamID, id string) (cascade.Decision, error) {
	return s.Decisions.GetDecision(ctx, teamID, id)
}

// RecentMemories implements memory.Store and consultations.Memories
// (memoryfake's).
func (s *Store) RecentMemories(ctx context.Context, teamID string, limit int) ([]memory.Memory, error) {
	return s.Memories.RecentMemories(ctx, teamID, limit)
}

// Clock is a settable clock for the services' Now fields (memtable.Clock).
type Clock = memtable.Clock

// NewClock is a Clock reading t.
func NewClock(t time.Time) *Clock { return memtable.NewClock(t) }

// Publisher records published events in memory (memtable.Publisher).
type Publisher = memtable.Publisher

// Event is one published event (memtable.Event).
type Event = memtable.Event

// Details returns the details of the recorded events of one detail type
// that are of type T, oldest first (memtable.Details).
func Details[T any](p *Publisher, detailType string) []T { return memtable.Details[T](p, detailType) }
