package results_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/results"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

const team = demo.TeamID

var user = tasks.Creator{Type: "user", ID: "key_test"}

type fixture struct {
	store  *memstore.Store
	tasks  *tasks.Service
	poster *results.Poster
	conv   string
	now    time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	store := memstore.New()
	require.NoError(t, demo.Seed(context.Background(), store))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	now := time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC)
	f := &fixture{store: store, tasks: tasks.NewService(store, nil, nil, log), now: now}
	f.poster = &results.Poster{Store: store, Log: log, Now: func() time.Time { return now }}
	f.conv = f.conversation(t)
	return f
}

func (f *fixture) conversation(t *testing.T) string {
	t.Helper()
	c := conversations.Conversation{ID: ids.New("conv"), TeamID: team, Title: "chat", Status: conversations.StatusOpen, Version: 1}
	require.NoError(t, f.store.CreateConversation(context.Background(), c, nil))
	return c.ID
}

func (f *fixture) messages(t *testing.T, conv string) []conversations.Message {
	t.Helper()
	list, _, err := f.store.ListMessages(context.Background(), team, conv, paging.Page{Limit: 100})
	require.NoError(t, err)
	return list
}

func (f *fixture) stored(t *testing.T, id string) conversations.Conversation {
	t.Helper()
	c, err := f.store.GetConversation(context.Background(), team, id)
	require.NoError(t, err)
	return c
}

// ended runs a board task of assignee to its end: complete with output,
// or fail with reason.
func (f *fixture) ended(t *testing.T, in tasks.CreateInput, output, failure string) tasks.Task {
	t.Helper()
	ctx := context.Background()
	tk, err := f.tasks.Create(ctx, team, user, in, false)
	require.NoError(t, err)
	_, err = f.tasks.Start(ctx, team, tk.ID, "user:key_test")
	require.NoError(t, err)
	if failure != "" {
		tk, err = f.tasks.Fail(ctx, team, tk.ID, "agent:"+in.Assignee, failure)
	} else {
		tk, err = f.tasks.Complete(ctx, team, tk.ID, "agent:"+in.Assignee, output, nil)
	}
	require.NoError(t, err)
	return tk
}

func event(tk tasks.Task) tasks.TaskStatusChanged {
	ev := tasks.TaskStatusChanged{TeamID: team, TaskID: tk.ID, Assignee: tk.Assignee, Status: tk.Status, PreviousStatus: tasks.Running}
	if tk.ResultDelivery != "" {
		ev.ConversationID = tk.ConversationID
	}
	if tk.Report != nil {
		ev.ReportID = tk.Report.ReportID
	}
	return ev
}

// A delegated task's result is posted once into its conversation, as the
// assignee's message naming the task; the conversation counts it and
// moves on a version. The same event delivered again posts nothing.
func TestATasksResultIsPostedOnceAsTheAssigneesMessage(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	before := f.stored(t, f.conv)
	tk := f.ended(t, tasks.CreateInput{Assignee: "luke", Title: "Audit auth", ConversationID: f.conv}, "No injection found.", "")

	out, err := f.poster.TaskEnded(ctx, event(tk))
	require.NoError(t, err)
	assert.Equal(t, results.Posted, out)
	msgs := f.messages(t, f.conv)
	require.Len(t, msgs, 1)
	m := msgs[0]
	assert.Equal(t, conversations.AuthorAssistant, m.Role)
	assert.Equal(t, "luke", m.Agent)
	assert.Equal(t, "No injection found.", m.Content)
	assert.Equal(t, results.StrategyDelegated, m.Strategy)
	assert.Equal(t, &conversations.WorkRef{Type: "task", ID: tk.ID, Status: "completed", Agent: "luke"}, m.ResultOf)
	assert.Equal(t, f.now, m.CreatedAt)
	after := f.stored(t, f.conv)
	assert.Equal(t, before.MessageCount+1, after.MessageCount)
	assert.Equal(t, before.Version+1, after.Version, "a turn that read the old version retries its commit")

	for range 2 {
		out, err = f.poster.TaskEnded(ctx, event(tk))
		require.NoError(t, err)
		assert.Equal(t, results.Duplicate, out)
	}
	assert.Len(t, f.messages(t, f.conv), 1, "a redelivered event posts nothing")
	assert.Equal(t, after, f.stored(t, f.conv))
}

// A failure is posted too, saying what ended the task.
func TestATasksFailureIsPosted(t *testing.T) {
	f := newFixture(t)
	tk := f.ended(t, tasks.CreateInput{Assignee: "dana", Title: "Sum it", ConversationID: f.conv}, "", "BudgetExceeded: token budget exceeded: used 4100 of 4000 tokens")
	out, err := f.poster.TaskEnded(context.Background(), event(tk))
	require.NoError(t, err)
	require.Equal(t, results.Posted, out)
	m := f.messages(t, f.conv)[0]
	assert.Equal(t, "Task "+tk.ID+" (Sum it) failed: BudgetExceeded: token budget exceeded: used 4100 of 4000 tokens", m.Content)
	assert.Equal(t, "dana", m.Agent)
	assert.Equal(t, "failed", m.ResultOf.Status)

	canceled, err := f.tasks.Create(context.Background(), team, user, tasks.CreateInput{Assignee: "dana", Title: "Later", ConversationID: f.conv}, false)
	require.NoError(t, err)
	canceled, err = f.tasks.Cancel(context.Background(), team, canceled.ID, "user:key_test", "not needed")
	require.NoError(t, err)
	_, err = f.poster.TaskEnded(context.Background(), event(canceled))
	require.NoError(t, err)
	assert.Equal(t, "Task "+canceled.ID+" (Later) was canceled: not needed", f.messages(t, f.conv)[1].Content)
}

// What is not posted: a task a chat turn waits for (its reply carries the
// result), a sub-task that only inherits its parent's conversation, a
// report's task (the report is posted), a session's stage, a task without
// a conversation, and any status change that is not an end. Events that
// name no conversation or no end are skipped without reading anything.
func TestWhatIsNotPosted(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	reply := f.ended(t, tasks.CreateInput{Assignee: "luke", Title: "waited", ConversationID: f.conv, ResultDelivery: tasks.DeliverInReply}, "r", "")
	plain := f.ended(t, tasks.CreateInput{Assignee: "dana", Title: "plain"}, "r", "")

	parent, err := f.tasks.Create(ctx, team, user, tasks.CreateInput{Assignee: "kyra", Title: "parent", ConversationID: f.conv}, false)
	require.NoError(t, err)
	_, err = f.tasks.Start(ctx, team, parent.ID, "user:key_test")
	require.NoError(t, err)
	child := f.ended(t, tasks.CreateInput{Assignee: "archie", ParentID: parent.ID, Title: "child"}, "r", "")
	require.Equal(t, f.conv, child.ConversationID)

	for name, tk := range map[string]tasks.Task{"reply": reply, "plain": plain, "inherited": child} {
		ev := event(tk)
		ev.ConversationID = f.conv // even an event that names it: the record decides
		out, err := f.poster.TaskEnded(ctx, ev)
		require.NoError(t, err, name)
		assert.Equal(t, results.Skipped, out, name)
	}
	// A report's or a session stage's task, faked on a record that would
	// otherwise post.
	rep := f.ended(t, tasks.CreateInput{Assignee: "sage", Title: "r", ConversationID: f.conv}, "r", "")
	stage, err := f.tasks.Create(ctx, team, tasks.Creator{Type: "user", ID: "session:ses_1"}, tasks.CreateInput{Assignee: "wren", Title: "stage", ConversationID: f.conv}, false)
	require.NoError(t, err)
	_, err = f.tasks.Cancel(ctx, team, stage.ID, "session:ses_1", "stop")
	require.NoError(t, err)
	stage.Status = tasks.Canceled
	ev := event(rep)
	ev.ReportID = "rep_1"
	out, err := f.poster.TaskEnded(ctx, ev)
	require.NoError(t, err)
	assert.Equal(t, results.Skipped, out, "a report's task")
	out, err = f.poster.TaskEnded(ctx, event(stage))
	require.NoError(t, err)
	assert.Equal(t, results.Skipped, out, "a session's stage")
	assert.Empty(t, f.messages(t, f.conv))

	// No read at all: a poster without a store would panic if it read.
	blind := &results.Poster{}
	for _, ev := range []tasks.TaskStatusChanged{
		{TeamID: team, TaskID: "task_x", Status: tasks.Running, ConversationID: f.conv},
		{TeamID: team, TaskID: "task_x", Status: tasks.Completed},
		{TeamID: team, TaskID: "task_x", Status: tasks.Completed, ConversationID: f.conv, ReportID: "rep_x"},
	} {
		out, err := blind.TaskEnded(ctx, ev)
		require.NoError(t, err)
		assert.Equal(t, results.Skipped, out)
	}
	for _, ev := range []reports.Finished{{TeamID: team, ReportID: "rep_x", Status: reports.Completed}, {TeamID: team, ReportID: "rep_x", Status: reports.Running, ConversationID: f.conv}} {
		out, err := blind.ReportEnded(ctx, ev)
		require.NoError(t, err)
		assert.Equal(t, results.Skipped, out)
	}
	for _, ev := range []sessions.SessionStatusChanged{{TeamID: team, SessionID: "ses_x", Status: sessions.Completed}, {TeamID: team, SessionID: "ses_x", Status: sessions.Active, ConversationID: f.conv}} {
		out, err := blind.SessionEnded(ctx, ev)
		require.NoError(t, err)
		assert.Equal(t, results.Skipped, out)
	}
}

// A task a chat reply waited for, whose reply was not stored, is posted
// by PostUndelivered as TaskEnded posts the others: the assignee's
// message, once. Work that posts itself or is still running is not.
func TestAResultNoStoredReplyCarriedIsPostedOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	waited := f.ended(t, tasks.CreateInput{Assignee: "luke", Title: "waited", ConversationID: f.conv, ResultDelivery: tasks.DeliverInReply}, "Two bugs in the parser.", "")
	ref := conversations.WorkRef{Type: results.WorkTask, ID: waited.ID, Agent: "luke", Status: "completed"}
	for range 2 {
		require.NoError(t, f.poster.PostUndelivered(ctx, team, f.conv, ref))
	}
	msgs := f.messages(t, f.conv)
	require.Len(t, msgs, 1, "posted once")
	assert.Equal(t, "luke", msgs[0].Agent)
	assert.Equal(t, "Two bugs in the parser.", msgs[0].Content)
	assert.Equal(t, &ref, msgs[0].ResultOf)
	// Its end event changes nothing: it was waited for in a reply.
	out, err := f.poster.TaskEnded(ctx, event(waited))
	require.NoError(t, err)
	assert.Equal(t, results.Skipped, out)

	// Delivered to the conversation by its own end, running, or not a
	// task: nothing here.
	own := f.ended(t, tasks.CreateInput{Assignee: "dana", Title: "own", ConversationID: f.conv}, "r", "")
	running, err := f.tasks.Create(ctx, team, user, tasks.CreateInput{Assignee: "dana", Title: "running", ConversationID: f.conv, ResultDelivery: tasks.DeliverInReply}, false)
	require.NoError(t, err)
	for _, w := range []conversations.WorkRef{{Type: results.WorkTask, ID: own.ID}, {Type: results.WorkTask, ID: running.ID}, {Type: results.WorkReport, ID: "rep_x"}} {
		require.NoError(t, f.poster.PostUndelivered(ctx, team, f.conv, w))
	}
	assert.Len(t, f.messages(t, f.conv), 1)
	// Another team's task is not found, and nothing is posted.
	err = f.poster.PostUndelivered(ctx, "team_other", f.conv, ref)
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "%v", err)
	assert.Len(t, f.messages(t, f.conv), 1)
}

// A turn posts only into its own conversation: a task linked to another
// conversation of the team is posted in neither (the other conversation's
// turn did not wait for it), and the mismatch is logged.
func TestAResultOfAnotherConversationIsNotPostedIntoTheTurns(t *testing.T) {
	f := newFixture(t)
	var logged strings.Builder
	f.poster.Log = slog.New(slog.NewTextHandler(&logged, nil))
	ctx := context.Background()
	other := f.conversation(t)
	elsewhere := f.ended(t, tasks.CreateInput{Assignee: "luke", Title: "elsewhere", ConversationID: other, ResultDelivery: tasks.DeliverInReply}, "r", "")
	ref := conversations.WorkRef{Type: results.WorkTask, ID: elsewhere.ID, Agent: "luke", Status: "completed"}
	require.NoError(t, f.poster.PostUndelivered(ctx, team, f.conv, ref))
	assert.Empty(t, f.messages(t, f.conv))
	assert.Empty(t, f.messages(t, other))
	assert.Contains(t, logged.String(), "a reply's result names another conversation")
	// Its own conversation's turn posts it.
	require.NoError(t, f.poster.PostUndelivered(ctx, team, other, ref))
	assert.Len(t, f.messages(t, other), 1)
}

// An output longer than a message may be is clipped to the conversation's
// limit.
func TestALongResultIsClippedToAMessage(t *testing.T) {
	f := newFixture(t)
	long := strings.Repeat("é", conversations.MaxContent+500)
	tk := f.ended(t, tasks.CreateInput{Assignee: "luke", Title: "long", ConversationID: f.conv}, long, "")
	_, err := f.poster.TaskEnded(context.Background(), event(tk))
	require.NoError(t, err)
	m := f.messages(t, f.conv)[0]
	assert.Equal(t, conversations.MaxContent, utf8.RuneCountInString(m.Content))
	assert.True(t, strings.HasSuffix(m.Content, "…"))
}

// A record that is gone is an error (the event is retried, then
// dead-lettered); a conversation that is gone has nowhere to take the
// result, so the event is done with.
func TestMissingRecordsAndConversations(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.poster.TaskEnded(ctx, tasks.TaskStatusChanged{TeamID: team, TaskID: "task_gone", Status: tasks.Completed, ConversationID: f.conv})
	require.Error(t, err)

	tk := f.ended(t, tasks.CreateInput{Assignee: "luke", Title: "x", ConversationID: f.conv}, "r", "")
	stored, err := f.store.GetTask(ctx, team, tk.ID)
	require.NoError(t, err)
	// The store refuses a result for a conversation that does not exist
	// (a record older than the conversation_id checks) …
	_, err = f.store.PostResult(ctx, team, conversations.Message{ID: ids.New("msg"), ConversationID: ids.New("conv"), Role: "assistant"}, "task_old")
	require.True(t, apperr.Is(err, apperr.ENOTFOUND), "%v", err)
	// … and the poster is done with the event.
	p := &results.Poster{Store: noConversation{f.store}}
	out, err := p.TaskEnded(ctx, event(stored))
	require.NoError(t, err)
	assert.Equal(t, results.Skipped, out)
}

type noConversation struct{ *memstore.Store }

func (noConversation) PostResult(_ context.Context, _ string, m conversations.Message, _ string) (bool, error) {
	return false, apperr.NotFound("conversation", m.ConversationID)
}

// A report requested from a conversation is posted there by its author:
// the report as its format renders it, or why it failed.
func TestAReportIsPostedByItsAuthor(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	done := reports.Report{TeamID: team, ID: ids.New("rep"), Type: "code_review", Title: "Review auth", To: "luke", From: "kyra",
		ConversationID: f.conv, Format: reports.Markdown, Status: reports.Completed, Version: 2,
		Sections: []reports.Section{{Name: "summary", Content: "Looks fine."}, {Name: "issues", Content: "None."}}}
	failed := reports.Report{TeamID: team, ID: ids.New("rep"), Type: "comparison", Title: "Compare", To: "dana", ConversationID: f.conv,
		Format: reports.Markdown, Status: reports.Failed, Reason: reports.ReasonMissingSections, Error: "required sections missing: matrix", Version: 2}
	for _, r := range []reports.Report{done, failed} {
		require.NoError(t, f.store.CreateReport(ctx, r))
		ev := reports.Finished{TeamID: team, ReportID: r.ID, Status: r.Status, ConversationID: r.ConversationID}
		out, err := f.poster.ReportEnded(ctx, ev)
		require.NoError(t, err)
		assert.Equal(t, results.Posted, out)
		out, err = f.poster.ReportEnded(ctx, ev)
		require.NoError(t, err)
		assert.Equal(t, results.Duplicate, out)
	}
	msgs := f.messages(t, f.conv)
	require.Len(t, msgs, 2)
	assert.Equal(t, "luke", msgs[0].Agent)
	assert.Equal(t, results.StrategyReport, msgs[0].Strategy)
	assert.Equal(t, &conversations.WorkRef{Type: "report", ID: done.ID, Status: "completed", Agent: "luke"}, msgs[0].ResultOf)
	assert.Equal(t, "Report "+done.ID+" (code_review): Review auth\n\n"+strings.TrimSpace(reports.Render(reports.Markdown, done.Sections)), msgs[0].Content)
	assert.Contains(t, msgs[0].Content, "Looks fine.")
	assert.Equal(t, "dana", msgs[1].Agent)
	assert.Equal(t, "Report "+failed.ID+" (comparison): Compare failed: MissingSections: required sections missing: matrix", msgs[1].Content)
}

// A session started from a conversation posts its end there: the final
// output as the lead's message naming its contributors, or a note; a run
// a resume superseded posts nothing, and the resumed run posts its own
// end.
func TestASessionsOutcomeIsPostedByItsLead(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ses := sessions.Session{TeamID: team, ID: ids.New("ses"), ConversationID: f.conv, Pattern: sessions.Brainstorm, Lead: "kyra", Goal: "Ideas",
		Participants: []sessions.Participant{{Agent: "luke", Role: "contributor"}, {Agent: "archie", Role: "contributor"}},
		Status:       sessions.Failed, StatusReason: sessions.ReasonStage, Convergence: "luke's stage failed", Runs: 1, Version: 3}
	require.NoError(t, f.store.CreateSession(ctx, ses))
	ev := sessions.SessionStatusChanged{TeamID: team, SessionID: ses.ID, Status: sessions.Failed, ConversationID: f.conv}
	out, err := f.poster.SessionEnded(ctx, ev)
	require.NoError(t, err)
	require.Equal(t, results.Posted, out)

	// Resumed: the old run's event (again) finds it running.
	ses.Status, ses.Runs, ses.Version = sessions.Active, 2, 4
	require.NoError(t, f.store.PutSession(ctx, ses))
	out, err = f.poster.SessionEnded(ctx, ev)
	require.NoError(t, err)
	assert.Equal(t, results.Skipped, out)

	ses.Status, ses.FinalOutput, ses.Version = sessions.Completed, "Three ideas: A, B, C.", 5
	require.NoError(t, f.store.PutSession(ctx, ses))
	ev.Status = sessions.Completed
	for want := range []results.Outcome{results.Posted, results.Duplicate} {
		out, err = f.poster.SessionEnded(ctx, ev)
		require.NoError(t, err)
		assert.Equal(t, []results.Outcome{results.Posted, results.Duplicate}[want], out)
	}
	msgs := f.messages(t, f.conv)
	require.Len(t, msgs, 2)
	assert.Equal(t, "Session "+ses.ID+" (brainstorm: Ideas) failed: StageFailed: luke's stage failed", msgs[0].Content)
	assert.Equal(t, "failed", msgs[0].ResultOf.Status)
	last := msgs[1]
	assert.Equal(t, "kyra", last.Agent)
	assert.Equal(t, "Three ideas: A, B, C.", last.Content)
	assert.Equal(t, []string{"luke", "archie"}, last.Contributors)
	assert.Equal(t, results.StrategyCollaboration, last.Strategy)
	assert.Equal(t, &conversations.WorkRef{Type: "session", ID: ses.ID, Status: "completed", Agent: "kyra"}, last.ResultOf)
}
