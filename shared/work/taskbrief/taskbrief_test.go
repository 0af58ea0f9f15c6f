package taskbrief_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/prompts"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/wire/localmodelwiring"
	"github.com/conclave-ai/conclave/shared/work/taskbrief"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

const team = demo.TeamID

type fixture struct {
	store *memstore.Store
	tasks *tasks.Service
	conv  string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	store := memstore.New()
	require.NoError(t, demo.Seed(context.Background(), store))
	c := conversations.Conversation{ID: ids.New("conv"), TeamID: team, Title: "chat", Status: conversations.StatusOpen, Version: 1}
	require.NoError(t, store.CreateConversation(context.Background(), c, nil))
	return fixture{store: store, tasks: tasks.NewService(store, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil))), conv: c.ID}
}

// say adds a message to the conversation (as the store adds any).
func (f fixture) say(t *testing.T, role, agent, content string) {
	t.Helper()
	m := conversations.Message{ID: ids.New("msg"), ConversationID: f.conv, Role: role, Agent: agent, Content: content, CreatedAt: time.Now().UTC()}
	_, err := f.store.PostResult(context.Background(), team, m, m.ID)
	require.NoError(t, err)
}

func (f fixture) task(t *testing.T, in tasks.CreateInput) tasks.Task {
	t.Helper()
	tk, err := f.tasks.Create(context.Background(), team, tasks.Creator{Type: "user", ID: "key_test"}, in, false)
	require.NoError(t, err)
	return tk
}

func input(tk tasks.Task) workflow.TaskInput {
	return workflow.TaskInput{TeamID: team, TaskID: tk.ID, Assignee: tk.Assignee, Title: tk.Title, Instructions: tk.Instructions}
}

// The brief is the task record's type, priority and input artifacts and
// the conversation's last ten messages, each clipped, attributed to the
// user or the agent that wrote it.
func TestTheBriefReadsTheTaskAndTheEndOfItsConversation(t *testing.T) {
	f := newFixture(t)
	for i := range 12 {
		f.say(t, conversations.AuthorUser, "", fmt.Sprintf("question %d", i))
	}
	f.say(t, conversations.AuthorAssistant, "kyra", strings.Repeat("long ", 200))
	tk := f.task(t, tasks.CreateInput{Assignee: "luke", Title: "Audit", Type: "review", Priority: "high", ConversationID: f.conv,
		InputArtifacts: []string{"src/auth/", "https://ci.example/42"}})

	b, err := taskbrief.Reader{Tasks: f.store, Conversations: f.store}.Brief(context.Background(), input(tk))
	require.NoError(t, err)
	assert.Equal(t, "review", b.Type)
	assert.Equal(t, "high", b.Priority)
	assert.Equal(t, []string{"src/auth/", "https://ci.example/42"}, b.InputArtifacts)
	require.Len(t, b.Conversation, taskbrief.RecentMessages)
	assert.Equal(t, prompts.Line{Author: "user", Content: "question 3"}, b.Conversation[0], "the last ten, oldest first")
	last := b.Conversation[len(b.Conversation)-1]
	assert.Equal(t, "kyra", last.Author)
	assert.Equal(t, taskbrief.MaxLine, len([]rune(last.Content)))
	assert.True(t, strings.HasSuffix(last.Content, "…"))
}

type countingConversations struct{ n int }

func (c *countingConversations) RecentMessages(context.Context, string, string, int) ([]conversations.Message, error) {
	c.n++
	return nil, nil
}

// A task without a conversation reads nothing more than its record; a
// task that does not exist is not found.
func TestATaskWithoutAConversationReadsNoConversation(t *testing.T) {
	f := newFixture(t)
	tk := f.task(t, tasks.CreateInput{Assignee: "luke", Title: "Plain"})
	c := &countingConversations{}
	b, err := taskbrief.Reader{Tasks: f.store, Conversations: c}.Brief(context.Background(), input(tk))
	require.NoError(t, err)
	assert.Equal(t, worker.Brief{Type: "execute", Priority: "normal", InputArtifacts: []string{}, CostCapUSD: tasks.DefaultCostCapUSD}, b, "the defaults the task was created with")
	assert.Zero(t, c.n)

	_, err = taskbrief.Reader{Tasks: f.store, Conversations: c}.Brief(context.Background(), workflow.TaskInput{TeamID: team, TaskID: "task_gone"})
	require.Error(t, err)
}

type requestLog struct {
	models.Model
	mu   sync.Mutex
	reqs []models.Request
}

func (r *requestLog) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.Model.Converse(ctx, req)
}

// End to end on the in-memory store, as the task-worker function wires it:
// the request the local model receives carries the task's fields, the
// conversation and the assignee's memories (shared and private).
func TestTheWorkersRequestCarriesTheBriefAndTheMemories(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.say(t, conversations.AuthorUser, "", "Please have someone audit the login flow.")
	f.say(t, conversations.AuthorAssistant, "kyra", "I'll ask Luke.")
	mem := &memory.Service{Store: f.store, Dir: f.store, Bus: &memstore.Publisher{}}
	_, err := mem.Create(ctx, team, "kyra", memory.CreateInput{Content: "The login flow moved to OAuth in March", Visibility: memory.Shared})
	require.NoError(t, err)
	_, err = mem.Create(ctx, team, "luke", memory.CreateInput{Content: "Sessions are stored in Redis", Visibility: memory.Private})
	require.NoError(t, err)
	tk := f.task(t, tasks.CreateInput{Assignee: "luke", Title: "Audit login", Type: "review", Priority: "urgent", ConversationID: f.conv,
		InputArtifacts: []string{"src/login/"}, Instructions: "Audit the login flow"})

	rec := &requestLog{Model: localmodelwiring.New(f.store)}
	w := &worker.Worker{Agents: f.store, Model: rec, Briefs: taskbrief.Reader{Tasks: f.store, Conversations: f.store}, Memories: mem}
	_, err = w.Run(ctx, input(tk))
	require.NoError(t, err)
	require.NotEmpty(t, rec.reqs)
	system := rec.reqs[0].System
	for _, want := range []string{"Type: review; priority: urgent", "- src/login/", "[user] Please have someone audit the login flow.",
		"[kyra] I'll ask Luke.", "What the team knows:\n- The login flow moved to OAuth in March", "What you remember:\n- Sessions are stored in Redis"} {
		assert.Contains(t, system, want)
	}
}

// The task's JSON input reaches the brief as one line, clipped.
func TestTheBriefCarriesTheInputClipped(t *testing.T) {
	f := newFixture(t)
	small := f.task(t, tasks.CreateInput{Assignee: "luke", Title: "Sum", Input: json.RawMessage(`{"rows": [1, 2]}`)})
	b, err := taskbrief.Reader{Tasks: f.store}.Brief(context.Background(), input(small))
	require.NoError(t, err)
	assert.Equal(t, `{"rows":[1,2]}`, b.Input)

	big := f.task(t, tasks.CreateInput{Assignee: "luke", Title: "Sum", Input: json.RawMessage(`"` + strings.Repeat(`x\n`, 5000) + `"`)})
	b, err = taskbrief.Reader{Tasks: f.store}.Brief(context.Background(), input(big))
	require.NoError(t, err)
	assert.Len(t, []rune(b.Input), taskbrief.MaxInput)
	assert.NotContains(t, b.Input, "\n", "JSON text is one line")
}
