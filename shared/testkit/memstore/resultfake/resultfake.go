// Package resultfake is the in-memory fake of results.Store (the work a
// result reports on, and the post of the result into its conversation),
// as shared/store/resultstore is the DynamoDB one; both are held to the
// store contract (shared/testkit/storetest).
package resultfake

import (
	"context"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/conversationfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/reportfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/sessionfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/taskfake"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/results"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

var _ results.Store = (*Results)(nil)

// Results is results.Store on a memtable.Table: it reads tasks, sessions
// and reports through their fakes and posts a result as a message of its
// conversation (conversationfake), as the adapter does. Safe for
// concurrent use.
type Results struct {
	tasks    *taskfake.Tasks
	reports  *reportfake.Reports
	sessions *sessionfake.Sessions
	tb       *memtable.Table
}

// New returns the results' store on tb (nil: a table of its own).
func New(tb *memtable.Table) *Results {
	if tb == nil {
		tb = memtable.New()
	}
	return &Results{tasks: taskfake.New(tb), reports: reportfake.New(tb), sessions: sessionfake.New(tb), tb: tb}
}

// GetTask implements results.Store (taskfake's).
func (s *Results) GetTask(ctx context.Context, teamID, id string) (tasks.Task, error) {
	return s.tasks.GetTask(ctx, teamID, id)
}

// GetReport implements results.Store (reportfake's).
func (s *Results) GetReport(ctx context.Context, teamID, id string) (reports.Report, error) {
	return s.reports.GetReport(ctx, teamID, id)
}

// GetSession implements results.Store (sessionfake's).
func (s *Results) GetSession(ctx context.Context, teamID, id string) (sessions.Session, error) {
	return s.sessions.GetSession(ctx, teamID, id)
}

// PostResult implements results.Store: the marker (absent: else posted is
// false and nothing is written), the message and its event on the
// conversation's stream (ResultPosted), and the conversation's
// message_count, version and event_seq, at once (the adapter's write is
// conditioned on the version it read, and tried again on a newer one:
// under the lock here, the version read is the version written); ENOTFOUND
// when the conversation does not exist. As in the adapter the
// conversation may be closed (a result still belongs to its record), and
// the order of the conditions is marker, conversation, message.
func (s *Results) PostResult(_ context.Context, teamID string, m conversations.Message, marker string) (bool, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	markers := memtable.Docs(s.tb, memtable.KindResultMarker)
	mk := memtable.Key{Team: teamID, ID: marker}
	if _, done := markers[mk]; done {
		return false, nil
	}
	convs := memtable.Docs(s.tb, memtable.KindConversation)
	ck := memtable.Key{Team: teamID, ID: m.ConversationID}
	b, ok := convs[ck]
	if !ok {
		return false, apperr.NotFound("conversation", m.ConversationID)
	}
	if !conversationfake.MessageFree(s.tb, teamID, m.ConversationID, m.ID) {
		return false, memtable.Conflict("result")
	}
	stream := streams.Conversation(m.ConversationID)
	c := memtable.ReadDoc[conversations.Conversation](b)
	c.ID, c.EventSeq = m.ConversationID, memtable.Head(s.tb, teamID, stream)+1
	evs, err := conversationfake.MessageEvents(teamID, c, []conversations.Message{m})
	if err == nil {
		err = memtable.StreamFree(s.tb, teamID, stream, evs)
	}
	if err != nil {
		return false, err
	}
	c.MessageCount++
	c.Version++
	c.UpdatedAt = m.CreatedAt
	c.Participants = nil
	convs[ck] = memtable.Doc(c)
	conversationfake.PutMessage(s.tb, teamID, m)
	memtable.StreamAppend(s.tb, teamID, stream, evs)
	markers[mk] = []byte(m.ID)
	return true, nil
}
