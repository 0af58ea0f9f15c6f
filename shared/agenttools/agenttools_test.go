package agenttools_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/agenttools"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// The tools are driven as the worker drives them (Call with the task being
// worked on), on the real task and messaging services over the in-memory
// store.

const team = demo.TeamID

type fixture struct {
	store *memstore.Store
	bus   *memstore.Publisher
	tasks *tasks.Service
	msgs  *messaging.Service
	tools *agenttools.Tools
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	store := memstore.New()
	require.NoError(tb, demo.Seed(context.Background(), store))
	bus := &memstore.Publisher{}
	ts := tasks.NewService(store, nil, bus, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ms := &messaging.Service{Store: store, Dir: store, Bus: bus}
	return &fixture{store: store, bus: bus, tasks: ts, msgs: ms, tools: &agenttools.Tools{Flags: allFlags, Tasks: ts, Messages: ms}}
}

// working returns the payload of a running task of agent, as the worker
// has it while the agent works on that task.
func (f *fixture) working(tb testing.TB, agent string) workflow.TaskInput {
	tb.Helper()
	ctx := context.Background()
	// Executed, as the tasks the worker runs are (the service has no
	// workflow runner: Start stands for the execution's start).
	t, err := f.tasks.Create(ctx, team, tasks.Creator{Type: "user", ID: "key_test"}, tasks.CreateInput{Assignee: agent, Title: "work"}, true)
	require.NoError(tb, err)
	_, err = f.tasks.Start(ctx, team, t.ID, "u")
	require.NoError(tb, err)
	return workflow.TaskInput{TeamID: team, TaskID: t.ID, Assignee: agent, Title: t.Title}
}

// call runs one tool call and requires it to succeed as a call (the
// output may still report a refusal).
func (f *fixture) call(tb testing.TB, p workflow.TaskInput, name string, input any) string {
	tb.Helper()
	raw, ok := input.(string)
	if !ok {
		b, err := json.Marshal(input)
		require.NoError(tb, err)
		raw = string(b)
	}
	out, err := f.tools.Call(context.Background(), p, models.ToolCall{ID: "call-1", Name: name, Input: raw})
	require.NoError(tb, err)
	return out
}

var delegatedRE = regexp.MustCompile(`^delegated as task (task_\S+) to ([a-z-]+); check it with check_task_status$`)

// delegate delegates without waiting and returns the new task's id.
func (f *fixture) delegate(tb testing.TB, p workflow.TaskInput, to string) string {
	tb.Helper()
	out := f.call(tb, p, "delegate_task", map[string]any{"to_agent": to, "title": "Help", "instructions": "Please help", "wait_for_result": false})
	m := delegatedRE.FindStringSubmatch(out)
	require.NotNil(tb, m, out)
	require.Equal(tb, to, m[2])
	return m[1]
}

var allFlags = settings.Flags{Collaboration: true, ExpertGate: true, Ensemble: true, TaskDelegation: true, Sessions: true}

func TestSpecsListTheTaskTools(t *testing.T) {
	f := newFixture(t)
	var names []string
	for _, s := range f.tools.Specs(agents.Agent{Slug: "luke"}) {
		names = append(names, s.Name)
		assert.NotEmpty(t, s.Description)
	}
	assert.Equal(t, []string{"delegate_task", "check_task_status", "next_task", "request_report", "get_report", "send_agent_message", "get_agent_inbox", "request_tool_pack"}, names,
		"no handoff_to in a task; no start_collaboration without a session service")
}

// The flags decide which tools exist, and declared tools are given only
// to the agents whose skills declare them.
func TestFlagsAndDeclaredToolsDecideTheSpecs(t *testing.T) {
	f := newFixture(t)
	luke := agents.Agent{Slug: "luke", Skills: []agents.Skill{{Name: "code-review", Tools: []string{"search_memories"}}}}
	assert.Contains(t, names(f.tools.Specs(luke)), "search_memories")
	assert.NotContains(t, names(f.tools.Specs(agents.Agent{Slug: "kyra"})), "search_memories")
	f.tools.Flags.TaskDelegation = false
	assert.Equal(t, []string{"send_agent_message", "get_agent_inbox", "search_memories", "request_tool_pack"}, names(f.tools.Specs(luke)))
	f.tools.Flags.Collaboration = false
	assert.Empty(t, f.tools.Specs(luke), "collaboration off: no tool at all")
	chat := agenttools.Chat{Tools: f.tools}
	assert.Empty(t, chat.Specs(luke))
	f.tools.Flags = allFlags
	assert.Contains(t, names(chat.Specs(luke)), "handoff_to")
}

func TestDelegateTaskWithoutWaitingCreatesALinkedSubtask(t *testing.T) {
	f := newFixture(t)
	p := f.working(t, "kyra")
	out := f.call(t, p, "delegate_task", map[string]any{
		"to_agent": "luke", "instructions": "Review the retry logic\nin worker.go", "task_type": "review",
		"priority": "high", "expected_output": "a list of issues", "wait_for_result": false,
	})
	m := delegatedRE.FindStringSubmatch(out)
	require.NotNil(t, m, out)

	child, err := f.tasks.Get(context.Background(), team, m[1])
	require.NoError(t, err)
	assert.Equal(t, p.TaskID, child.ParentID)
	assert.Equal(t, p.TaskID, child.RootID)
	assert.Equal(t, tasks.Creator{Type: "agent", ID: "kyra"}, child.CreatedBy)
	assert.Equal(t, "luke", child.Assignee)
	assert.Equal(t, "Review the retry logic", child.Title, "the title defaults to the first line")
	assert.Equal(t, "review", child.Type)
	assert.Equal(t, "high", child.Priority)
	assert.Equal(t, "a list of issues", child.ExpectedOutput)
	assert.True(t, child.Execute, "a delegation runs through the state machine")
	assert.Equal(t, tasks.Queued, child.Status)
	assert.Equal(t, 1, child.Depth)
	load, err := f.tasks.Load(context.Background(), team, "luke")
	require.NoError(t, err)
	assert.Equal(t, 1, load.Active)
}

// callbacks records the task tokens the task model completes.
type callbacks struct {
	mu   sync.Mutex
	sent map[string]workflow.ChildOutcome
}

func (c *callbacks) Succeed(_ context.Context, token string, output any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sent == nil {
		c.sent = map[string]workflow.ChildOutcome{}
	}
	c.sent[token] = output.(workflow.ChildOutcome)
	return nil
}

func (c *callbacks) get(token string) (workflow.ChildOutcome, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.sent[token]
	return o, ok
}

// Waiting for the result stops the attempt (worker.WaitFor) instead of
// polling; the machine's Await registers its token on the child, and the
// child's end sends the token the outcome the tool would have returned.
func TestDelegateTaskWaitsInTheWorkflow(t *testing.T) {
	f := newFixture(t)
	cb := &callbacks{}
	f.tasks.Callbacks = cb
	ctx := context.Background()
	p := f.working(t, "kyra")

	_, err := f.tools.Call(ctx, p, models.ToolCall{Name: "delegate_task", Input: `{"to_agent":"luke","title":"Review","instructions":"Review it"}`})
	var wait worker.WaitFor
	require.ErrorAs(t, err, &wait)
	child, err := f.tasks.Get(ctx, team, wait.ChildTaskID)
	require.NoError(t, err)
	assert.Equal(t, p.TaskID, child.ParentID)

	require.NoError(t, f.tasks.Await(ctx, team, p.TaskID, "", child.ID, "token-1"))
	_, ok := cb.get("token-1")
	assert.False(t, ok, "nothing is sent while the child runs")

	_, err = f.tasks.Start(ctx, team, child.ID, "agent:luke")
	require.NoError(t, err)
	_, err = f.tasks.Complete(ctx, team, child.ID, "agent:luke", "two issues found", nil)
	require.NoError(t, err)
	got, ok := cb.get("token-1")
	require.True(t, ok, "the child's end woke the parent")
	assert.Equal(t, workflow.ChildOutcome{TaskID: child.ID, Status: "completed", Assignee: "luke", Summary: "task " + child.ID + " by luke completed: two issues found"}, got)
}

// A child that ended before the parent's execution got to wait wakes it at
// once; a parent that is no longer this execution's is not waited for.
func TestAwaitingAnEndedChildWakesAtOnce(t *testing.T) {
	f := newFixture(t)
	cb := &callbacks{}
	f.tasks.Callbacks = cb
	ctx := context.Background()
	p := f.working(t, "kyra")
	childID := f.delegate(t, p, "luke")
	_, err := f.tasks.Cancel(ctx, team, childID, "u", "not needed")
	require.NoError(t, err)

	require.NoError(t, f.tasks.Await(ctx, team, p.TaskID, "", childID, "token-2"))
	got, ok := cb.get("token-2")
	require.True(t, ok)
	assert.Equal(t, "canceled", got.Status)

	assert.ErrorIs(t, f.tasks.Await(ctx, team, p.TaskID, "arn:other-execution", childID, "token-3"), tasks.ErrNotRunnable)
	other := f.working(t, "dana")
	err = f.tasks.Await(ctx, team, other.TaskID, "", childID, "token-4")
	assert.Error(t, err, "a task only waits for its own children")
}

func TestRejectedDelegationsComeBackAsToolOutput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(tb testing.TB, f *fixture) workflow.TaskInput
		input  string
		output string
	}{
		{"to itself", func(tb testing.TB, f *fixture) workflow.TaskInput { return f.working(tb, "kyra") },
			`{"to_agent":"kyra","title":"x","instructions":"do x"}`, `^rejected \(SelfDelegation\): an agent cannot delegate a task to itself$`},
		{"to an unknown agent", func(tb testing.TB, f *fixture) workflow.TaskInput { return f.working(tb, "kyra") },
			`{"to_agent":"nobody","title":"x","instructions":"do x"}`, `^rejected: agent "nobody" not found$`},
		{"to a busy agent", func(tb testing.TB, f *fixture) workflow.TaskInput {
			for range tasks.MaxActivePerAgent {
				f.working(tb, "luke")
			}
			return f.working(tb, "kyra")
		}, `{"to_agent":"luke","title":"x","instructions":"do x"}`, `^rejected \(ConcurrencyLimit\): agent "luke" already has 5 running or queued tasks$`},
		{"back up the chain", func(tb testing.TB, f *fixture) workflow.TaskInput {
			kyra := f.working(tb, "kyra")
			id := f.delegate(tb, kyra, "luke")
			_, err := f.tasks.Start(context.Background(), team, id, "agent:luke")
			require.NoError(tb, err)
			return workflow.TaskInput{TeamID: team, TaskID: id, Assignee: "luke"}
		}, `{"to_agent":"kyra","title":"x","instructions":"do x"}`, `^rejected \(CycleDetected\): agent "kyra" is already in the delegation chain kyra → luke$`},
		{"from a task that is not running", func(tb testing.TB, f *fixture) workflow.TaskInput {
			p := f.working(tb, "kyra")
			_, err := f.tasks.Complete(context.Background(), team, p.TaskID, "u", "done", nil)
			require.NoError(tb, err)
			return p
		}, `{"to_agent":"luke","title":"x","instructions":"do x"}`, `^rejected \(InvalidTransition\): the parent task is completed; only a running task can delegate$`},
		{"with an invalid field", func(tb testing.TB, f *fixture) workflow.TaskInput { return f.working(tb, "kyra") },
			`{"to_agent":"luke","title":"x","instructions":"do x","task_type":"dance"}`, `^\{"error":"invalid_arguments","field":"task_type","message":"enum: dance does not equal any of: \[research `},
		{"without instructions", func(tb testing.TB, f *fixture) workflow.TaskInput { return f.working(tb, "kyra") },
			`{"to_agent":"luke","title":"x"}`, `^\{"error":"invalid_arguments","field":"instructions","message":"required argument missing"\}$`},
		{"with the API's name for the assignee", func(tb testing.TB, f *fixture) workflow.TaskInput { return f.working(tb, "kyra") },
			`{"assignee":"luke","to_agent":"luke","instructions":"do x"}`, `^\{"error":"invalid_arguments","field":"assignee","message":"not an argument of this tool"\}$`},
		{"with unreadable input", func(tb testing.TB, f *fixture) workflow.TaskInput { return f.working(tb, "kyra") },
			`{"to_agent":`, `^\{"error":"invalid_arguments","message":"the arguments are not valid JSON: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			p := tc.setup(t, f)
			out := f.call(t, p, "delegate_task", tc.input)
			assert.Regexp(t, tc.output, out)
			list, _, err := f.tasks.List(context.Background(), team, tasks.Filter{Parent: p.TaskID}, paging.Page{Limit: 10})
			require.NoError(t, err)
			assert.Empty(t, list, "nothing was delegated")
		})
	}
}

func TestCheckTaskStatusDescribesTheTask(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p := f.working(t, "kyra")
	id := f.delegate(t, p, "luke")
	check := func() string {
		t.Helper()
		return f.call(t, p, "check_task_status", map[string]string{"task_id": id})
	}
	assert.Equal(t, "task "+id+" by luke is queued", check())

	_, err := f.tasks.Start(ctx, team, id, "agent:luke")
	require.NoError(t, err)
	assert.Equal(t, "task "+id+" by luke is running", check())

	_, err = f.tasks.Fail(ctx, team, id, "agent:luke", "the repository is private")
	require.NoError(t, err)
	assert.Equal(t, "task "+id+" by luke ended failed: the repository is private", check())

	assert.Equal(t, `rejected: task "task_nope" not found`, f.call(t, p, "check_task_status", `{"task_id":"task_nope"}`))
	assert.Regexp(t, `^\{"error":"invalid_arguments","message":"the arguments are not valid JSON`, f.call(t, p, "check_task_status", `not json`))
	assert.Equal(t, `{"error":"invalid_arguments","field":"task_id","message":"type: 42 has type \"integer\", want \"string\""}`, f.call(t, p, "check_task_status", `{"task_id":42}`))
}

func TestSendAgentMessageAndReadTheInbox(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	kyra := f.working(t, "kyra")
	luke := workflow.TaskInput{TeamID: team, TaskID: "task_other", Assignee: "luke"}

	out := f.call(t, kyra, "send_agent_message", map[string]string{"to_agent": "luke", "message": "Please look at PR 42\nThe retry logic changed.", "message_type": "info_request"})
	m := regexp.MustCompile(`^sent message (amsg_\S+) on direct$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)

	sent := memstore.Details[messaging.SentEvent](f.bus, messaging.DetailType)
	require.Len(t, sent, 1)
	assert.Equal(t, messaging.SentEvent{TeamID: team, MessageID: m[1], From: "kyra", To: "luke", Channel: messaging.ChannelDirect, Type: "info_request", CreatedAt: sent[0].CreatedAt}, sent[0])
	stored, err := f.store.GetAgentMessage(ctx, team, m[1])
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"task_id": kyra.TaskID}, stored.Metadata, "the message names the task it was sent from")

	assert.Equal(t, "no messages", f.call(t, luke, "get_agent_inbox", `{}`), "nothing until the fan-out delivers")
	n, err := f.msgs.FanOut(ctx, team, m[1]) // what the AgentMessageSent consumer does
	require.NoError(t, err)
	require.Equal(t, 1, n)

	inbox := f.call(t, luke, "get_agent_inbox", `{}`)
	assert.Regexp(t, `^\[\S+\] info_request from kyra on direct: Please look at PR 42\n$`, inbox)
	assert.Equal(t, "no messages", f.call(t, luke, "get_agent_inbox", `{"unread_only": true}`), "reading marks them read")
	assert.Contains(t, f.call(t, luke, "get_agent_inbox", `{"unread_only": false}`), "from kyra", "all messages include read ones")
	assert.Equal(t, "no messages", f.call(t, kyra, "get_agent_inbox", `{}`), "the sender's inbox is its own")
}

func TestSendAgentMessageRefusalsComeBackAsToolOutput(t *testing.T) {
	f := newFixture(t)
	kyra := f.working(t, "kyra")
	for input, want := range map[string]string{
		`{"to_agent":"nobody","message":"hi"}`:                       `^rejected: agent "nobody" not found$`,
		`{"to_agent":"kyra","message":"hi"}`:                         `^rejected: an agent cannot message itself$`,
		`{"to_agent":"luke","message":"hi","message_type":"gossip"}`: `^\{"error":"invalid_arguments","field":"message_type"`,
		`{"to_agent":"luke","message":"   "}`:                        `^rejected: content must be 1 to 8000 characters$`,
		`{"to_agent":"luke","message":""}`:                           `^\{"error":"invalid_arguments","field":"message"`,
		`{"channel":"task:task_nope","message":"hi"}`:                `^rejected: task "task_nope" not found$`,
		`{"to_agent":`: `^\{"error":"invalid_arguments"`,
	} {
		assert.Regexp(t, want, f.call(t, kyra, "send_agent_message", input), input)
	}
	assert.Empty(t, f.bus.OfType(messaging.DetailType), "nothing was sent")
}

func TestMessagingToolsWithoutMessaging(t *testing.T) {
	f := newFixture(t)
	f.tools.Messages = nil
	p := f.working(t, "kyra")
	assert.Equal(t, "messaging is not available", f.call(t, p, "send_agent_message", `{"to_agent":"luke","message":"hi"}`))
	assert.Equal(t, "messaging is not available", f.call(t, p, "get_agent_inbox", `{}`))
}

func TestAnUnknownToolIsReportedToTheModel(t *testing.T) {
	f := newFixture(t)
	assert.Equal(t, "tool dance is not available to you", f.call(t, f.working(t, "kyra"), "dance", `{}`))
}

// next_task starts the caller's own best queued board task and describes
// it; an empty queue says so.
func TestNextTaskStartsTheCallersBestQueuedTask(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p := f.working(t, "luke") // running: not in the queue
	user := tasks.Creator{Type: "user", ID: "key_test"}
	_, err := f.tasks.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", Title: "later", Priority: "low"}, false)
	require.NoError(t, err)
	best, err := f.tasks.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", Title: "fix the build", Instructions: "the CI is red",
		Priority: "urgent", Input: json.RawMessage(`{"job":42}`)}, false)
	require.NoError(t, err)
	_, err = f.tasks.Create(ctx, team, user, tasks.CreateInput{Assignee: "dana", Title: "not luke's", Priority: "urgent"}, false)
	require.NoError(t, err)

	assert.Equal(t, "started task "+best.ID+" (urgent priority): fix the build\ninstructions: the CI is red\ninput: {\"job\":42}", f.call(t, p, "next_task", `{}`))
	got, err := f.tasks.Get(ctx, team, best.ID)
	require.NoError(t, err)
	assert.Equal(t, tasks.Running, got.Status)
	assert.Equal(t, "agent:luke", got.Events[len(got.Events)-1].Actor)
	assert.Contains(t, f.call(t, p, "next_task", ""), "(low priority): later")
	assert.Equal(t, "no queued task: your queue is empty", f.call(t, p, "next_task", `{}`))
	assert.Equal(t, `{"error":"invalid_arguments","field":"agent","message":"not an argument of this tool"}`, f.call(t, p, "next_task", `{"agent":"dana"}`), "only the caller's own queue")
}
