package worker_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/prompts"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// requestLog is the model port in front of another model, keeping every
// request it is sent.
type requestLog struct {
	models.Model
	mu       sync.Mutex
	requests []models.Request
}

func (r *requestLog) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	r.mu.Lock()
	r.requests = append(r.requests, req)
	r.mu.Unlock()
	return r.Model.Converse(ctx, req)
}

func (r *requestLog) first(tb testing.TB) models.Request {
	tb.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(tb, r.requests)
	return r.requests[0]
}

type briefs struct {
	brief worker.Brief
	err   error
	asked []string
}

func (b *briefs) Brief(_ context.Context, p workflow.TaskInput) (worker.Brief, error) {
	b.asked = append(b.asked, p.TaskID)
	return b.brief, b.err
}

type memories struct {
	mc    memory.Context
	err   error
	asked []string
}

func (m *memories) ForPerson(_ context.Context, teamID, agent, person string) (memory.Context, error) {
	asked := teamID + "/" + agent
	if person != "" {
		asked += " for " + person
	}
	m.asked = append(m.asked, asked)
	return m.mc, m.err
}

func briefed(b *briefs, m *memories) (*worker.Worker, *requestLog) {
	w := newWorker(nil)
	rec := &requestLog{Model: w.Model}
	w.Model, w.Briefs, w.Memories = rec, b, m
	return w, rec
}

// The executing agent sees its task's type, priority and input artifacts,
// the end of the conversation the task came from, and its memories (the
// team's shared ones, the user's profile and its own), as a chat reply's
// agent does.
func TestTheAgentSeesItsTasksFieldsConversationAndMemories(t *testing.T) {
	b := &briefs{brief: worker.Brief{Type: "review", Priority: "urgent", InputArtifacts: []string{"src/parser.go", "s3://bucket/log.txt"},
		Conversation: []prompts.Line{{Author: "user", Content: "Is the parser safe?"}, {Author: "kyra", Content: "Asking Luke."}}}}
	m := &memories{mc: memory.Context{
		UserProfile: []memory.Memory{{Content: "The user prefers bullet points"}},
		Shared:      []memory.Memory{{Content: "The parser is in Go"}},
		Private:     []memory.Memory{{Content: "I found a panic there last week"}},
	}}
	w, rec := briefed(b, m)
	_, err := w.Run(context.Background(), payload("ok"))
	require.NoError(t, err)

	system := rec.first(t).System
	for _, want := range []string{
		"Task: t\n", "Type: review; priority: urgent\n",
		"Input artifacts:\n- src/parser.go\n- s3://bucket/log.txt\n",
		"[user] Is the parser safe?\n[kyra] Asking Luke.\n",
		"About the user:\n- The user prefers bullet points\n",
		"What the team knows:\n- The parser is in Go\n",
		"What you remember:\n- I found a panic there last week\n",
	} {
		assert.Contains(t, system, want)
	}
	assert.Equal(t, []string{"task_1"}, b.asked)
	assert.Equal(t, []string{"t/ok"}, m.asked, "the assignee's own context")
	assert.Equal(t, "review the parser", rec.first(t).Messages[0].Content, "the instructions stay the user's message")
}

// A memory context that cannot be read is left out: the task runs, and
// its timeline says it ran without one.
// A task a person started works for them: its model calls carry the
// person (their monthly budget reserves beside the team's) and the agent
// reads that person's profile beside the team's. A task no person started
// carries none.
func TestATaskWorksForThePersonWhoStartedIt(t *testing.T) {
	m := &memories{}
	w, rec := briefed(&briefs{brief: worker.Brief{Type: "execute", UserID: "alice"}}, m)
	_, err := w.Run(context.Background(), payload("ok"))
	require.NoError(t, err)
	assert.Equal(t, "alice", rec.first(t).Metadata[models.MetadataUserID])
	assert.Equal(t, []string{"t/ok for alice"}, m.asked)

	m = &memories{}
	w, rec = briefed(&briefs{brief: worker.Brief{Type: "execute"}}, m)
	_, err = w.Run(context.Background(), payload("ok"))
	require.NoError(t, err)
	assert.NotContains(t, rec.first(t).Metadata, models.MetadataUserID)
	assert.Equal(t, []string{"t/ok"}, m.asked)
}

func TestAMemoryFailureStillRunsTheTask(t *testing.T) {
	w, rec := briefed(&briefs{brief: worker.Brief{Type: "execute", Priority: "normal"}}, &memories{err: errors.New("dynamodb GetItem failed")})
	tr := &fakeTracker{running: true}
	w.Tracker = tr
	res, err := w.Run(context.Background(), payload("ok"))
	require.NoError(t, err)
	assert.NotEmpty(t, res.Output)
	assert.NotContains(t, rec.first(t).System, "What the team knows")
	assert.Contains(t, rec.first(t).System, "Type: execute; priority: normal")
	assert.Equal(t, []string{"progress", "progress", "progress"}, tr.events, "started, the memory note, finished")
}

// The brief is the task's own record: a failed read fails the attempt
// (the machine retries it); a record that does not exist is an invalid
// task, not retried.
func TestABriefThatCannotBeReadFailsTheAttempt(t *testing.T) {
	w, rec := briefed(&briefs{err: errors.New("dynamodb GetItem failed")}, nil)
	_, err := w.Run(context.Background(), payload("ok"))
	require.Error(t, err)
	assert.NotErrorAs(t, err, new(workflow.InvalidTask))
	assert.Empty(t, rec.requests, "no model call")

	w, _ = briefed(&briefs{err: apperr.NotFound("task", "task_1")}, nil)
	_, err = w.Run(context.Background(), payload("ok"))
	assert.ErrorAs(t, err, new(workflow.InvalidTask))
}
