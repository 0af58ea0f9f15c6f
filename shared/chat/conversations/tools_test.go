package conversations_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/work/results"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// toolModel asks for the tool named in its plan at every call while the
// request offers tools and the plan has calls left, then answers; each
// response reports tokens tokens.
type toolModel struct {
	mu      sync.Mutex
	plan    []models.ToolCall
	forever string // asks for this tool at every call, even without tools
	// failAfter: once the plan's calls are made, every call fails.
	failAfter bool
	tokens    int
	requests  []models.Request
}

func (m *toolModel) Converse(_ context.Context, req models.Request) (models.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, req)
	resp := models.Response{InputTokens: m.tokens / 2, OutputTokens: m.tokens - m.tokens/2, ModelID: "test-model"}
	done := 0
	for _, msg := range req.Messages {
		if msg.Role == "tool" {
			done++
		}
	}
	switch {
	case m.forever != "":
		resp.ToolCalls = []models.ToolCall{{ID: fmt.Sprint("c", done), Name: m.forever, Input: "{}"}}
	case len(req.Tools) > 0 && done < len(m.plan):
		resp.ToolCalls = []models.ToolCall{m.plan[done]}
	case m.failAfter:
		return models.Response{}, fmt.Errorf("%w: the answer after the tools failed", models.ErrModel)
	default:
		var outs []string
		for _, msg := range req.Messages {
			if msg.Role == "tool" {
				outs = append(outs, msg.Content)
			}
		}
		resp.Text = "answer after: " + strings.Join(outs, " | ")
	}
	return resp, nil
}

// fakeTools offers specs and answers each call from answers (by name),
// recording the calls.
type fakeTools struct {
	mu      sync.Mutex
	specs   []models.Tool
	answers map[string]conversations.ToolResult
	calls   []conversations.ToolCaller
	names   []string
	// during runs inside each call (a change made while the reply is
	// being written).
	during func()
	// asked are the agents Specs was asked for, as it was given them.
	asked []agents.Agent
}

func (f *fakeTools) Specs(a agents.Agent) []models.Tool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, a)
	return f.specs
}

func (f *fakeTools) Call(_ context.Context, c conversations.ToolCaller, call models.ToolCall) (conversations.ToolResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.names = append(f.calls, c), append(f.names, call.Name)
	if f.during != nil {
		f.during()
	}
	if r, ok := f.answers[call.Name]; ok {
		return r, nil
	}
	return conversations.ToolResult{Text: call.Name + " done"}, nil
}

func toolFixture(t *testing.T, m *toolModel, tools *fakeTools) *fixture {
	// Direct dispatch: the conversation's agent answers.
	f := newFixture(t, collaborationOff)
	f.cfg.Model, f.cfg.Tools = m, tools
	f.rebuild()
	return f
}

func spec(names ...string) []models.Tool {
	var out []models.Tool
	for _, n := range names {
		out = append(out, models.Tool{Name: n, Description: n})
	}
	return out
}

func TestAReplyRunsTheToolsItCallsAndAnswersWithTheirResults(t *testing.T) {
	m := &toolModel{tokens: 20, plan: []models.ToolCall{{ID: "1", Name: "check_task_status", Input: `{"task_id":"task_1"}`}, {ID: "2", Name: "get_agent_inbox", Input: `{}`}}}
	tools := &fakeTools{specs: spec("check_task_status", "get_agent_inbox")}
	f := toolFixture(t, m, tools)
	c := f.create(t, "kyra")
	before := time.Now()
	r := reply(t, f.post(t, c.ID, "How is the audit going?"))
	after := time.Now()
	assert.Equal(t, "answer after: check_task_status done | get_agent_inbox done", r.Content)
	require.Len(t, r.ToolCalls, 2)
	assert.Equal(t, conversations.ToolUse{Tool: "check_task_status", Input: `{"task_id":"task_1"}`, Output: "check_task_status done"}, r.ToolCalls[0])
	assert.Empty(t, r.Stopped)
	assert.Equal(t, 60, r.InputTokens+r.OutputTokens, "the reply counts every model call of its loop")
	require.Len(t, tools.calls, 2)
	assert.Equal(t, conversations.ToolCaller{TeamID: team, ConversationID: c.ID, Agent: "kyra", Skills: tools.calls[0].Skills, WaitUntil: tools.calls[0].WaitUntil, Offered: tools.specs,
		Messages: []models.Message{{Role: "user", Content: "How is the audit going?"}}, TokensLeft: workflow.MaxTaskTokens - 20}, tools.calls[0])
	assert.Equal(t, workflow.MaxTaskTokens-40, tools.calls[1].TokensLeft, "what the turn's model calls left")
	assert.Len(t, tools.calls[1].Messages, 3, "the second call sees the first call and its result (a call held for approval is finished from them)")
	assert.NotEmpty(t, tools.calls[0].Skills, "the agent's skills: a supports_hitl skill gates its tools")
	// The models' time (DefaultBudget without a deadline) starts during
	// the turn; a tool waits until its end less the answer's reserve.
	wait := conversations.DefaultBudget - conversations.ToolAnswerReserve
	assert.WithinRange(t, tools.calls[0].WaitUntil, before.Add(wait), after.Add(wait), "a tool waits until the models' time ends, less the reserve")
	assert.Equal(t, tools.calls[0].WaitUntil, tools.calls[1].WaitUntil, "one limit for every tool of the reply")
	stored := f.messages(t, c.ID)
	assert.Equal(t, r.ToolCalls, stored[len(stored)-1].ToolCalls, "the tool calls are stored with the reply")
}

func TestWithoutToolsOfferedTheModelGetsNone(t *testing.T) {
	m := &toolModel{tokens: 20, plan: []models.ToolCall{{ID: "1", Name: "delegate_task", Input: `{}`}}}
	tools := &fakeTools{} // the flags left nothing
	f := toolFixture(t, m, tools)
	r := reply(t, f.post(t, f.create(t, "kyra").ID, "hello"))
	assert.Empty(t, m.requests[0].Tools)
	assert.Empty(t, tools.calls)
	assert.Empty(t, r.ToolCalls)
}

// Past the tool-call budget no tool runs; the model is asked once more,
// without tools, and answers.
func TestTheToolCallBudgetStopsTheLoop(t *testing.T) {
	var plan []models.ToolCall
	for i := range 15 {
		plan = append(plan, models.ToolCall{ID: fmt.Sprint(i), Name: "get_agent_inbox", Input: "{}"})
	}
	m := &toolModel{tokens: 10, plan: plan}
	tools := &fakeTools{specs: spec("get_agent_inbox")}
	f := toolFixture(t, m, tools)
	r := reply(t, f.post(t, f.create(t, "kyra").ID, "check everything"))
	assert.Len(t, tools.calls, workflow.MaxTaskToolCalls, "exactly the budget's tool calls ran")
	assert.Len(t, r.ToolCalls, workflow.MaxTaskToolCalls+1, "the refused call is recorded")
	assert.Contains(t, r.ToolCalls[workflow.MaxTaskToolCalls].Output, "not run")
	assert.Equal(t, conversations.StoppedToolCalls, r.Stopped)
	last := m.requests[len(m.requests)-1]
	assert.Empty(t, last.Tools, "the last model call offers no tool")
	assert.True(t, strings.HasPrefix(r.Content, "answer after:"), r.Content)
}

// A model that keeps calling tools after it was told to answer is stopped
// too.
func TestAModelThatIgnoresTheBudgetIsStopped(t *testing.T) {
	m := &toolModel{tokens: 10, forever: "get_agent_inbox"}
	tools := &fakeTools{specs: spec("get_agent_inbox")}
	f := toolFixture(t, m, tools)
	r := reply(t, f.post(t, f.create(t, "kyra").ID, "loop"))
	assert.Len(t, tools.calls, workflow.MaxTaskToolCalls)
	assert.Equal(t, conversations.StoppedToolCalls, r.Stopped)
	assert.Len(t, m.requests, workflow.MaxTaskToolCalls+2, "one call per tool, one refused, then it stops")
	assert.Contains(t, r.Content, "tool calls")
}

// Once the turn's tokens are spent no model is asked again.
func TestTheTokenBudgetStopsTheLoop(t *testing.T) {
	var plan []models.ToolCall
	for i := range 8 {
		plan = append(plan, models.ToolCall{ID: fmt.Sprint(i), Name: "get_agent_inbox", Input: "{}"})
	}
	m := &toolModel{tokens: 1500, plan: plan}
	tools := &fakeTools{specs: spec("get_agent_inbox")}
	f := toolFixture(t, m, tools)
	r := reply(t, f.post(t, f.create(t, "kyra").ID, "dig deep"))
	assert.Len(t, m.requests, 3, "1,500 + 1,500 + 1,500 tokens: the third call spends the budget of %d", workflow.MaxTaskTokens)
	assert.Len(t, tools.calls, 2, "the third response's tool call is not run")
	assert.Equal(t, conversations.StoppedTokens, r.Stopped)
	assert.Contains(t, r.Content, "budget of 4000 tokens")
	assert.Equal(t, 4500, r.InputTokens+r.OutputTokens)

	// Exactly the budget (2,000 + 2,000) is spent: the second call is the
	// last.
	m = &toolModel{tokens: 2000, plan: plan}
	tools = &fakeTools{specs: spec("get_agent_inbox")}
	f = toolFixture(t, m, tools)
	r = reply(t, f.post(t, f.create(t, "kyra").ID, "dig deep"))
	assert.Len(t, m.requests, 2)
	assert.Equal(t, conversations.StoppedTokens, r.Stopped)
	assert.Equal(t, workflow.MaxTaskTokens, r.InputTokens+r.OutputTokens)
}

// Work a tool left running is listed on the reply, and the reply says so.
func TestPendingWorkIsListedAndAnnounced(t *testing.T) {
	m := &toolModel{tokens: 10, plan: []models.ToolCall{{ID: "1", Name: "delegate_task", Input: `{"to_agent":"luke"}`}}}
	ref := conversations.WorkRef{Type: "task", ID: "task_01abc", Agent: "luke", Status: "running"}
	tools := &fakeTools{specs: spec("delegate_task"), answers: map[string]conversations.ToolResult{"delegate_task": {Text: "still running", Pending: &ref}}}
	f := toolFixture(t, m, tools)
	c := f.create(t, "kyra")
	r := reply(t, f.post(t, c.ID, "audit the code"))
	assert.Equal(t, []conversations.WorkRef{ref}, r.Pending)
	assert.Contains(t, r.Content, "Still running: task task_01abc (luke)")
}

// handoff_to makes the same records as POST …/handoff, committed with the
// turn: the record, the note after the reply, the roles, the memory, and
// the new agent answers next.
func TestAnAgentHandsTheConversationOverFromItsReply(t *testing.T) {
	m := &toolModel{tokens: 10, plan: []models.ToolCall{{ID: "1", Name: "handoff_to", Input: `{}`}}}
	tools := &fakeTools{specs: spec("handoff_to"), answers: map[string]conversations.ToolResult{
		"handoff_to": {Handoff: &conversations.HandoffRequest{To: "luke", Reason: "code review is Luke's", Summary: "wants a review of the parser"}}}}
	f := toolFixture(t, m, tools)
	c := f.create(t, "kyra")
	res := f.post(t, c.ID, "Please review my parser")
	r := reply(t, res)
	assert.Contains(t, r.ToolCalls[0].Output, "goes to Luke")
	last := res.Replies[len(res.Replies)-1]
	assert.Equal(t, conversations.AuthorSystem, last.Role, "the handoff's note follows the reply")
	assert.Contains(t, last.Content, "handed off to Luke because code review is Luke's")
	assert.Greater(t, last.ID, r.ID, "and sorts after it")

	got := f.get(t, c.ID)
	assert.Equal(t, "luke", got.CurrentAgent)
	assert.Equal(t, "kyra", got.PreviousAgent)
	assert.True(t, got.HandoffActive)
	assert.Equal(t, conversations.RoleHandoffSource, roles(got)["kyra"])
	hs, err := f.svc.Handoffs(context.Background(), team, c.ID)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Equal(t, conversations.Handoff{ID: hs[0].ID, ConversationID: c.ID, From: "kyra", To: "luke", Kind: conversations.KindHandoff,
		Reason: "code review is Luke's", ContextSummary: "wants a review of the parser", MemoryID: hs[0].MemoryID, CreatedAt: hs[0].CreatedAt}, hs[0])
	assert.NotEmpty(t, hs[0].MemoryID, "the episodic memory of the handoff")
	assert.Equal(t, 1, f.activeConversations(t, "luke"))
	assert.Equal(t, 0, f.activeConversations(t, "kyra"))

	m.plan = nil
	assert.Equal(t, "luke", reply(t, f.post(t, c.ID, "Here it is")).Agent, "the new agent answers the next message")
}

func TestAHandoffToAnUnknownOrTheSameAgentIsRefusedToTheModel(t *testing.T) {
	for _, to := range []string{"kyra", "nobody"} {
		m := &toolModel{tokens: 10, plan: []models.ToolCall{{ID: "1", Name: "handoff_to", Input: `{}`}}}
		tools := &fakeTools{specs: spec("handoff_to"), answers: map[string]conversations.ToolResult{
			"handoff_to": {Handoff: &conversations.HandoffRequest{To: to, Reason: "why not"}}}}
		f := toolFixture(t, m, tools)
		c := f.create(t, "kyra")
		r := reply(t, f.post(t, c.ID, "hi"))
		assert.Contains(t, r.ToolCalls[0].Output, "rejected", to)
		got := f.get(t, c.ID)
		assert.Equal(t, "kyra", got.CurrentAgent, to)
		assert.Nil(t, got.LastHandoff, to)
	}
}

// recordingPoster records the work a turn posts because no stored reply
// carries its result.
type recordingPoster struct {
	mu     sync.Mutex
	posted []conversations.WorkRef
	convs  []string // the conversation each was posted into
}

func (p *recordingPoster) PostUndelivered(_ context.Context, teamID, convID string, w conversations.WorkRef) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if teamID != team {
		return fmt.Errorf("posted for team %q", teamID)
	}
	p.posted = append(p.posted, w)
	p.convs = append(p.convs, convID)
	return nil
}

// A delegation the reply waited for ends within the turn: its result is
// the tool's output, and only the reply delivers it. When that reply is
// not stored (the agent's answer after the tool failed, or the turn's
// commit failed) the turn posts the result instead; when it is stored,
// nothing is posted.
func TestAResultOnlyTheReplyCarriedIsPostedWhenTheReplyIsNotStored(t *testing.T) {
	ref := conversations.WorkRef{Type: "task", ID: "task_01done", Agent: "luke", Status: "completed"}
	delegate := []models.ToolCall{{ID: "1", Name: "delegate_task", Input: `{"to_agent":"luke"}`}}
	setup := func(m *toolModel) (*fixture, *fakeTools, *recordingPoster) {
		tools := &fakeTools{specs: spec("delegate_task"), answers: map[string]conversations.ToolResult{"delegate_task": {Text: "42 findings", Delivered: &ref}}}
		f := toolFixture(t, m, tools)
		poster := &recordingPoster{}
		f.cfg.Results = poster
		f.rebuild()
		return f, tools, poster
	}

	t.Run("the reply is stored", func(t *testing.T) {
		f, _, poster := setup(&toolModel{tokens: 10, plan: delegate})
		c := f.create(t, "kyra")
		r := reply(t, f.post(t, c.ID, "audit the code"))
		assert.Contains(t, r.Content, "42 findings")
		assert.Empty(t, poster.posted, "the stored reply delivers it")
	})

	t.Run("the answer after the tool fails", func(t *testing.T) {
		f, tools, poster := setup(&toolModel{tokens: 10, plan: delegate, failAfter: true})
		c := f.create(t, "kyra")
		res, err := f.svc.Post(context.Background(), team, c.ID, conversations.PostInput{Content: "audit the code"})
		requireAppErr(t, err, apperr.EUPSTREAM, "AllAgentsFailed")
		assert.Equal(t, []string{"delegate_task"}, tools.names)
		require.Len(t, res.Replies, 1)
		assert.Equal(t, conversations.AuthorSystem, res.Replies[0].Role, "no reply, a note")
		assert.Equal(t, []conversations.WorkRef{ref}, poster.posted)
		assert.Equal(t, []string{c.ID}, poster.convs, "into the turn's conversation")
	})

	t.Run("the turn is not stored", func(t *testing.T) {
		f, tools, poster := setup(&toolModel{tokens: 10, plan: delegate})
		c := f.create(t, "kyra")
		// The conversation is closed while the reply is being written:
		// the turn's commit is refused and nothing of it is stored.
		tools.during = func() {
			_, err := f.svc.Close(context.Background(), team, c.ID)
			require.NoError(t, err)
		}
		_, err := f.svc.Post(context.Background(), team, c.ID, conversations.PostInput{Content: "audit the code"})
		requireAppErr(t, err, apperr.ECONFLICT, "ConversationClosed")
		assert.Empty(t, f.messages(t, c.ID), "nothing of the turn is stored")
		assert.Equal(t, []conversations.WorkRef{ref}, poster.posted)
		assert.Equal(t, []string{c.ID}, poster.convs, "into the turn's conversation")
	})

	t.Run("without a poster it is logged", func(t *testing.T) {
		f, _, _ := setup(&toolModel{tokens: 10, plan: delegate, failAfter: true})
		var logged strings.Builder
		f.cfg.Results, f.cfg.Log = nil, slog.New(slog.NewTextHandler(&logged, nil))
		f.rebuild()
		c := f.create(t, "kyra")
		_, err := f.svc.Post(context.Background(), team, c.ID, conversations.PostInput{Content: "audit the code"})
		requireAppErr(t, err, apperr.EUPSTREAM, "AllAgentsFailed")
		assert.Contains(t, logged.String(), "a result the reply carried was not posted")
		assert.Contains(t, logged.String(), "work_id=task_01done")
	})
}

// appliedStore's commit is applied, then takes until its context ends, as
// a transaction DynamoDB applied whose answer never reached the function.
type appliedStore struct{ *memstore.Store }

func (s appliedStore) CommitTurn(ctx context.Context, teamID string, t conversations.Turn) error {
	if err := s.Store.CommitTurn(ctx, teamID, t); err != nil {
		return err
	}
	<-ctx.Done()
	return fmt.Errorf("dynamodb TransactWriteItems failed: %w", ctx.Err())
}

// The result of a delegation the reply waited for is in the conversation
// exactly once whatever happens to the turn's commit: the commit writes
// the result's marker, and the turn posts the result after any failed
// commit, a cut-off one included. Here with the real result poster over
// the same store: cut off before it applied, the result is posted; cut off
// after it applied, the reply carries it and nothing more is posted; a
// result posted first (a cut-off commit still in flight) refuses the
// commit.
func TestAResultTheReplyCarriedIsInTheConversationOnceWhateverTheCommit(t *testing.T) {
	setup := func(t *testing.T) (*fixture, conversations.Conversation, conversations.WorkRef) {
		t.Helper()
		m := &toolModel{tokens: 10, plan: []models.ToolCall{{ID: "1", Name: "delegate_task", Input: `{"to_agent":"luke"}`}}}
		tools := &fakeTools{specs: spec("delegate_task")}
		f := toolFixture(t, m, tools)
		// A 3 s reserve: the commit's context ends 300 ms before the
		// turn's, and a post after a cut-off commit has 250 ms of them,
		// room enough on a loaded machine.
		f.cfg.CommitReserve = 3 * time.Second
		f.cfg.Results = &results.Poster{Store: f.store, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		f.rebuild()
		c := f.create(t, "kyra")
		ctx := context.Background()
		board := tasks.NewService(f.store, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
		tk, err := board.Create(ctx, team, tasks.Creator{Type: "agent", ID: "kyra"}, tasks.CreateInput{Assignee: "luke", Title: "audit", ConversationID: c.ID, ResultDelivery: tasks.DeliverInReply}, false)
		require.NoError(t, err)
		_, err = board.Start(ctx, team, tk.ID, "agent:luke")
		require.NoError(t, err)
		_, err = board.Complete(ctx, team, tk.ID, "agent:luke", "42 findings", nil)
		require.NoError(t, err)
		ref := conversations.WorkRef{Type: results.WorkTask, ID: tk.ID, Agent: "luke", Status: "completed"}
		tools.answers = map[string]conversations.ToolResult{"delegate_task": {Text: "42 findings", Delivered: &ref}}
		return f, c, ref
	}
	cutOff := func(t *testing.T, f *fixture, c conversations.Conversation) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 6500*time.Millisecond)
		defer cancel()
		_, err := f.svc.Post(ctx, team, c.ID, conversations.PostInput{Content: "audit the code"})
		requireAppErr(t, err, apperr.EINTERNAL, "")
		assert.NoError(t, ctx.Err(), "answered before the deadline")
		f.cfg.Store = f.store
		f.rebuild()
	}
	withResult := func(msgs []conversations.Message) []conversations.Message {
		var out []conversations.Message
		for _, m := range msgs {
			if strings.Contains(m.Content, "42 findings") {
				out = append(out, m)
			}
		}
		return out
	}

	t.Run("cut off before it applied", func(t *testing.T) {
		t.Parallel()
		// The commit's cut-off waits on the fake clock of a synctest
		// bubble (it jumps to the deadline), not seconds of real time.
		synctest.Test(t, func(t *testing.T) {
			f, c, ref := setup(t)
			f.cfg.Store = hangingStore{f.store}
			f.rebuild()
			cutOff(t, f, c)
			msgs := f.messages(t, c.ID)
			require.Len(t, msgs, 1, "nothing of the turn, the posted result")
			assert.Equal(t, "luke", msgs[0].Agent)
			assert.Equal(t, &ref, msgs[0].ResultOf)
		})
	})

	t.Run("cut off after it applied", func(t *testing.T) {
		t.Parallel()
		// The commit's cut-off waits on the fake clock of a synctest
		// bubble (it jumps to the deadline), not seconds of real time.
		synctest.Test(t, func(t *testing.T) {
			f, c, _ := setup(t)
			f.cfg.Store = appliedStore{f.store}
			f.rebuild()
			cutOff(t, f, c)
			carrying := withResult(f.messages(t, c.ID))
			require.Len(t, carrying, 1, "the stored reply, and no posted result")
			assert.Equal(t, "kyra", carrying[0].Agent)
			assert.Nil(t, carrying[0].ResultOf)
		})
	})

	t.Run("posted before the commit", func(t *testing.T) {
		t.Parallel()
		f, c, ref := setup(t)
		// The post of a turn that gave up on its commit lands first; the
		// commit, still in flight, must not add the reply carrying it.
		require.NoError(t, f.cfg.Results.PostUndelivered(context.Background(), team, c.ID, ref))
		_, err := f.svc.Post(context.Background(), team, c.ID, conversations.PostInput{Content: "audit the code"})
		requireAppErr(t, err, apperr.ECONFLICT, "TransactionConflict")
		carrying := withResult(f.messages(t, c.ID))
		require.Len(t, carrying, 1)
		assert.Equal(t, &ref, carrying[0].ResultOf, "the posted result only")
	})
}

// With a deadline the models' time ends 2 × the commit reserve before it
// (when that is sooner than DefaultBudget): a tool waits until then, less
// the answer's reserve.
func TestAToolWaitsUntilTheModelsTimeEndsLessTheReserve(t *testing.T) {
	m := &toolModel{tokens: 20, plan: []models.ToolCall{{ID: "1", Name: "get_agent_inbox", Input: `{}`}}}
	tools := &fakeTools{specs: spec("get_agent_inbox")}
	f := toolFixture(t, m, tools)
	c := f.create(t, "kyra")
	before := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	dl, _ := ctx.Deadline()
	_, err := f.svc.Post(ctx, team, c.ID, conversations.PostInput{Content: "How is the audit going?"})
	require.NoError(t, err)
	took := time.Since(before)
	require.Len(t, tools.calls, 1)
	// min(24 s, 15 s − 2 × 2 s) = 11 s from the turn's start: its end is
	// the deadline less 4 s, and the tool's limit 6 s before that.
	until := dl.Add(-2*conversations.DefaultCommitReserve - conversations.ToolAnswerReserve)
	assert.WithinRange(t, tools.calls[0].WaitUntil, until, until.Add(took))
}

// gate scores the agents as given, for the selector to choose from.
type gate struct{ scores []routing.ExpertScore }

func (g gate) Score(context.Context, expertgate.Request) (expertgate.Response, error) {
	return expertgate.Response{Scores: g.scores}, nil
}

// gateFixture routes through the expert gate (every routing flag on) with
// luke, dana and archie scored 0.9, 0.8 and 0.7.
func gateFixture(t *testing.T, m models.Model, tools *fakeTools) *fixture {
	t.Helper()
	f := newFixture(t, cascade.Flags{Collaboration: true, ExpertGate: true, Ensemble: true})
	f.cfg.Router.Gate = gate{scores: []routing.ExpertScore{
		{AgentSlug: "luke", AgentName: "Luke", Overall: 0.9, Confidence: 0.9, Label: "code review"},
		{AgentSlug: "dana", AgentName: "Dana", Overall: 0.8, Confidence: 0.8, Label: "data analysis"},
		{AgentSlug: "archie", AgentName: "Archie", Overall: 0.7, Confidence: 0.7, Label: "architecture"},
	}}
	f.cfg.Model, f.cfg.Tools = m, tools
	f.rebuild()
	return f
}

// TOP_K and ENSEMBLE ask several agents at once and keep or merge their
// replies, so none of them is offered a tool; the same strategies with one
// agent selected, or falling back to the default agent, answer with one
// agent, which has its tools.
func TestToolsAreOfferedOnlyWhenOneAgentAnswers(t *testing.T) {
	k1, k2 := 1, 2
	high := 0.95
	for _, c := range []struct {
		name  string
		in    conversations.PostInput
		tools bool
		// answered are the agents asked.
		answered []string
	}{
		{"top_k of two", conversations.PostInput{Strategy: "top_k", K: &k2}, false, []string{"luke", "dana"}},
		{"ensemble of three", conversations.PostInput{Strategy: "ensemble"}, false, []string{"luke", "dana", "archie"}},
		{"top_k of one", conversations.PostInput{Strategy: "top_k", K: &k1}, true, []string{"luke"}},
		{"ensemble of one", conversations.PostInput{Strategy: "ensemble", Threshold: ptr(0.85)}, true, []string{"luke"}},
		{"top_k falling back", conversations.PostInput{Strategy: "top_k", K: &k2, Threshold: &high}, true, []string{"kyra"}},
		{"ensemble falling back", conversations.PostInput{Strategy: "ensemble", Threshold: &high}, true, []string{"kyra"}},
		{"top_1", conversations.PostInput{Strategy: "top_1"}, true, []string{"luke"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &toolModel{tokens: 10, plan: []models.ToolCall{{ID: "1", Name: "get_agent_inbox", Input: `{}`}}}
			tools := &fakeTools{specs: spec("get_agent_inbox")}
			f := gateFixture(t, m, tools)
			conv := f.create(t, "kyra")
			in := c.in
			in.Content = "How should the parser handle retries?"
			res, err := f.svc.Post(context.Background(), team, conv.ID, in)
			require.NoError(t, err)
			var asked []string
			for _, a := range res.Routing.Attempts {
				asked = append(asked, a.Agent)
			}
			require.ElementsMatch(t, c.answered, asked, "the agents the strategy asks")
			for _, req := range m.requests {
				assert.Equal(t, c.tools, len(req.Tools) > 0, "%s was offered tools: %v", req.Metadata[models.MetadataAgent], req.Tools)
			}
			if c.tools {
				assert.Equal(t, []string{"get_agent_inbox"}, tools.names)
				assert.Len(t, reply(t, res).ToolCalls, 1)
			} else {
				assert.Empty(t, tools.calls, "no tool ran")
				assert.Empty(t, reply(t, res).ToolCalls)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// cascadeModel: luke calls get_agent_inbox six times, then fails; every
// other agent calls it while tools are offered, then answers.
type cascadeModel struct {
	mu       sync.Mutex
	requests []models.Request
}

func (m *cascadeModel) Converse(_ context.Context, req models.Request) (models.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, req)
	agent := req.Metadata[models.MetadataAgent]
	done := 0
	for _, msg := range req.Messages {
		if msg.Role == "tool" {
			done++
		}
	}
	resp := models.Response{InputTokens: 5, OutputTokens: 5, ModelID: "test-model"}
	switch {
	case agent == "luke" && done >= 6:
		return models.Response{}, fmt.Errorf("%w: luke gives up", models.ErrModel)
	case len(req.Tools) > 0:
		resp.ToolCalls = []models.ToolCall{{ID: fmt.Sprint(agent, done), Name: "get_agent_inbox", Input: "{}"}}
	default:
		resp.Text = agent + " answers after " + fmt.Sprint(done) + " tool results"
	}
	return resp, nil
}

// A CASCADE's candidates share the turn's budget: the tool calls the first
// spent before it failed are not the second's to spend again. Each
// candidate's tools wait at most until its share of the models' time ends,
// less the answer's reserve.
func TestCascadeCandidatesShareOneTurnBudget(t *testing.T) {
	m := &cascadeModel{}
	tools := &fakeTools{specs: spec("get_agent_inbox")}
	f := gateFixture(t, m, tools)
	conv := f.create(t, "kyra")
	k := 2
	before := time.Now()
	res, err := f.svc.Post(context.Background(), team, conv.ID, conversations.PostInput{Content: "Why is the parser slow?", Strategy: "cascade", K: &k})
	require.NoError(t, err)
	took := time.Since(before)
	r := reply(t, res)
	assert.Equal(t, "dana", r.Agent)

	byAgent := map[string]int{}
	var lukeUntil, danaUntil time.Time
	for _, c := range tools.calls {
		byAgent[c.Agent]++
		switch c.Agent {
		case "luke":
			lukeUntil = c.WaitUntil
		case "dana":
			danaUntil = c.WaitUntil
		}
	}
	assert.Equal(t, map[string]int{"luke": 6, "dana": workflow.MaxTaskToolCalls - 6}, byAgent, "one budget of %d tool calls for the turn", workflow.MaxTaskToolCalls)
	assert.Equal(t, conversations.StoppedToolCalls, r.Stopped)
	assert.Len(t, r.ToolCalls, workflow.MaxTaskToolCalls-6+1, "dana's four, and the one refused")

	// The first of two candidates has half of the models' time; the last
	// has what is left of it.
	b, reserve := conversations.DefaultBudget, conversations.ToolAnswerReserve
	assert.WithinRange(t, lukeUntil, before.Add(b/2-reserve), before.Add(b/2-reserve+2*took))
	assert.WithinRange(t, danaUntil, before.Add(b-reserve), before.Add(b-reserve+took))
}

// The agent that delegated sees the result on its next turn: a task's
// result, posted into the conversation as the result-poster does on the
// task's end, is in the history the next reply's model receives, marked
// as the assignee's.
func TestTheDelegatingAgentSeesAPostedResultOnItsNextTurn(t *testing.T) {
	f := newFixture(t, collaborationOff)
	ctx := context.Background()
	c := f.create(t, "kyra")
	f.post(t, c.ID, "Audit the parser")

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	board := tasks.NewService(f.store, nil, f.bus, log)
	tk, err := board.Create(ctx, team, tasks.Creator{Type: "agent", ID: "kyra"}, tasks.CreateInput{Assignee: "luke", Title: "Audit the parser", ConversationID: c.ID}, false)
	require.NoError(t, err)
	_, err = board.Start(ctx, team, tk.ID, "agent:luke")
	require.NoError(t, err)
	_, err = board.Complete(ctx, team, tk.ID, "agent:luke", "42 findings in the parser", nil)
	require.NoError(t, err)
	ended := memstore.Details[tasks.TaskStatusChanged](f.bus, "TaskStatusChanged")
	require.NotEmpty(t, ended)
	out, err := (&results.Poster{Store: f.store, Log: log}).TaskEnded(ctx, ended[len(ended)-1])
	require.NoError(t, err)
	require.Equal(t, results.Posted, out)

	f.post(t, c.ID, "What did Luke find?")
	assert.Equal(t, []models.Message{
		{Role: "user", Content: "Audit the parser"},
		{Role: "assistant", Content: "kyra answers: Audit the parser"},
		{Role: "assistant", Content: "[luke] 42 findings in the parser"},
		{Role: "user", Content: "What did Luke find?"},
	}, f.model.last(t).Messages)
}

// A skill's tools belong to it (seed 003): an agent a skill match chose
// is offered what that skill declares, not its other skills' tools; one
// chosen otherwise (a mention) has all of them.
func TestTheMatchedSkillDecidesTheToolsOffered(t *testing.T) {
	m := &toolModel{tokens: 20}
	tools := &fakeTools{specs: spec("get_agent_inbox")}
	f := newFixture(t, collaborationOn)
	f.cfg.Model, f.cfg.Tools = m, tools
	f.rebuild()
	ctx := context.Background()
	luke, err := f.store.GetAgent(ctx, team, "luke")
	require.NoError(t, err)
	skills := append(luke.Skills, agents.Skill{Name: "release-notes", Description: "Draft changelogs for a release", Tools: []string{"summarize_text"}})
	_, err = agents.NewService(f.store).Update(ctx, team, "luke", agents.UpdateInput{Skills: &skills})
	require.NoError(t, err)

	c := f.create(t, "kyra")
	res := f.post(t, c.ID, "Can you review this Go function for bugs?")
	require.Equal(t, "luke", reply(t, res).Agent)
	require.Equal(t, "code-review", res.Routing.Skill)
	require.NotEmpty(t, tools.asked)
	got := tools.asked[len(tools.asked)-1]
	require.Len(t, got.Skills, 1, "the matched skill alone")
	assert.Equal(t, "code-review", got.Skills[0].Name)
	assert.Equal(t, []string{"search_memories"}, got.Skills[0].Tools)

	res = f.post(t, c.ID, "@luke and what about the tests?")
	require.Equal(t, "luke", reply(t, res).Agent)
	got = tools.asked[len(tools.asked)-1]
	assert.Len(t, got.Skills, 2, "a mention matched no skill: every skill's tools")
}
