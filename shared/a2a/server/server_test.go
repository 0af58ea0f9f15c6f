package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/a2a/server"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// fakeTasks is the task model of two teams, in memory: a task ends as
// finish says once Wait is asked (as the delegation workflow would end it).
type fakeTasks struct {
	mu      sync.Mutex
	byID    map[string]tasks.Task
	created []tasks.CreateInput
	refuse  error
	finish  func(t *tasks.Task)
	waited  time.Duration
	// settled is what the waiter's condition said of the task as it ended.
	settled bool
}

func (f *fakeTasks) Create(_ context.Context, teamID string, c tasks.Creator, in tasks.CreateInput, _ bool) (tasks.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse != nil {
		return tasks.Task{}, f.refuse
	}
	f.created = append(f.created, in)
	t := tasks.Task{TeamID: teamID, ID: fmt.Sprintf("task_%d", len(f.byID)+1), CreatedBy: c, Assignee: in.Assignee,
		ConversationID: in.ConversationID, Title: in.Title, Instructions: in.Instructions, Status: tasks.Queued,
		CreatedAt: time.Unix(100, 0), UpdatedAt: time.Unix(100, 0)}
	f.byID[t.ID] = t
	return t, nil
}

func (f *fakeTasks) Get(_ context.Context, teamID, id string) (tasks.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.byID[id]
	if !ok || t.TeamID != teamID {
		return tasks.Task{}, apperr.NotFound("task", id)
	}
	return t, nil
}

func (f *fakeTasks) WaitUntil(ctx context.Context, teamID, id string, d time.Duration, done func(tasks.Task) bool) (tasks.Task, error) {
	f.mu.Lock()
	f.waited = d
	if t, ok := f.byID[id]; ok && t.TeamID == teamID && f.finish != nil {
		f.finish(&t)
		f.byID[id] = t
		f.settled = done(t)
	}
	f.mu.Unlock()
	return f.Get(ctx, teamID, id)
}

func (f *fakeTasks) List(_ context.Context, teamID string, _ tasks.Filter, p paging.Page) ([]tasks.Task, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []tasks.Task
	for i := 1; i <= len(f.byID); i++ {
		if t := f.byID[fmt.Sprintf("task_%d", i)]; t.TeamID == teamID {
			out = append(out, t)
		}
	}
	return out, "", nil
}

func (f *fakeTasks) Cancel(_ context.Context, teamID, id, _, _ string) (tasks.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.byID[id]
	if !ok || t.TeamID != teamID {
		return tasks.Task{}, apperr.NotFound("task", id)
	}
	if t.Status.Terminal() {
		return tasks.Task{}, apperr.New(apperr.ECONFLICT, "ended")
	}
	t.Status = tasks.Canceled
	f.byID[id] = t
	return t, nil
}

type fakeRouter struct{ asked []string }

func (r *fakeRouter) Choose(_ context.Context, _, _, text string) (string, error) {
	r.asked = append(r.asked, text)
	return "kyra", nil
}

// fakeContexts: team_a has conv_a; opening makes conv_new.
type fakeContexts struct{ opened, discarded int }

func (c *fakeContexts) Open(context.Context, string, string) (string, error) {
	c.opened++
	return "conv_new", nil
}

func (c *fakeContexts) Discard(context.Context, string, string) { c.discarded++ }

func (c *fakeContexts) Check(_ context.Context, teamID, id string) error {
	if teamID == "team_a" && id == "conv_a" {
		return nil
	}
	return apperr.NotFound("conversation", id)
}

// fakeApprovals: the pending and decided approvals by id, of team_a.
type fakeApprovals struct {
	status  map[string]approvals.Status
	decided map[string]approvals.DecideInput
	// late: reads that find nothing before the approval is written.
	late, reads int
}

func (a *fakeApprovals) Get(_ context.Context, teamID, id string) (approvals.Approval, error) {
	if a.reads++; a.reads <= a.late {
		return approvals.Approval{}, apperr.NotFound("approval", id)
	}
	st, ok := a.status[id]
	if !ok || teamID != "team_a" {
		return approvals.Approval{}, apperr.NotFound("approval", id)
	}
	return approvals.Approval{ID: id, Status: st}, nil
}

func (a *fakeApprovals) Decide(_ context.Context, _, id, _ string, in approvals.DecideInput) (approvals.Approval, error) {
	a.decided[id] = in
	a.status[id] = approvals.Status(in.Decision + "d")
	return approvals.Approval{}, nil
}

type fakeRegistry struct{}

func (fakeRegistry) GetTeam(_ context.Context, id string) (teams.Team, error) {
	return teams.Team{ID: id, Name: "Acme"}, nil
}

func (fakeRegistry) Agents(context.Context, string) ([]agents.Agent, error) {
	return []agents.Agent{
		{Slug: "kyra", Skills: []agents.Skill{
			{Name: "code-review", Description: "Reviews code", Domains: []string{"code"}, Public: true},
			{Name: "triage", Description: "Sorts bugs"},
		}},
		{Slug: "nova", Skills: []agents.Skill{{Name: "secrets", Description: "Internal", InternalOnly: true, Public: true}}},
	}, nil
}

type world struct {
	svc       *server.Service
	tasks     *fakeTasks
	router    *fakeRouter
	contexts  *fakeContexts
	approvals *fakeApprovals
}

func newWorld() *world {
	w := &world{tasks: &fakeTasks{byID: map[string]tasks.Task{}}, router: &fakeRouter{}, contexts: &fakeContexts{},
		approvals: &fakeApprovals{status: map[string]approvals.Status{}, decided: map[string]approvals.DecideInput{}}}
	w.svc = &server.Service{Tasks: w.tasks, Router: w.router, Conversations: w.contexts, Approvals: w.approvals,
		Registry: fakeRegistry{}, Deadline: 5 * time.Second, Version: "test"}
	return w
}

func teamA() context.Context {
	return server.With(context.Background(), server.Endpoint{TeamID: "team_a", BaseURL: "https://api.example/a2a/a2a_x"})
}

func textMessage(text string) *a2a.Message {
	return a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
}

// protocolErr is err's A2A error, its kind and its data.
func protocolErr(t *testing.T, err error) (*a2a.Error, map[string]any) {
	t.Helper()
	var e *a2a.Error
	require.True(t, errors.As(err, &e), "an A2A error: %v", err)
	return e, e.Details
}

func TestStatesMapAsDocumented(t *testing.T) {
	cases := []struct {
		status tasks.Status
		reason string
		want   a2a.TaskState
	}{
		{tasks.Queued, "", a2a.TaskStateSubmitted},
		{tasks.Running, "", a2a.TaskStateWorking},
		{tasks.Blocked, tasks.ReasonAwaitingApproval, a2a.TaskStateInputRequired},
		{tasks.Blocked, "waiting for a colleague", a2a.TaskStateWorking},
		{tasks.Completed, "", a2a.TaskStateCompleted},
		{tasks.Failed, "", a2a.TaskStateFailed},
		{tasks.TimedOut, "", a2a.TaskStateFailed},
		{tasks.Canceled, "", a2a.TaskStateCanceled},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, server.State(tasks.Task{Status: c.status, StatusReason: c.reason, ApprovalIDs: []string{"apr_1"}}), "%s %q", c.status, c.reason)
	}
	assert.Len(t, cases, len(tasks.Statuses)+1, "every status (blocked twice)")
	// A parent blocked while its sub-task waits for an approval has none
	// of its own: the sub-task is the one to decide, the parent works on.
	assert.Equal(t, a2a.TaskStateWorking, server.State(tasks.Task{Status: tasks.Blocked, StatusReason: tasks.ReasonAwaitingApproval}))
}

func TestTaskCarriesTheAnswerAsItsArtifact(t *testing.T) {
	done := tasks.Task{ID: "task_1", ConversationID: "conv_1", Status: tasks.Completed, Instructions: "Review it",
		Result: "Looks good.", Output: json.RawMessage(`{"bugs":0}`)}
	got := server.Task(done, nil)
	assert.Equal(t, a2a.TaskID("task_1"), got.ID)
	assert.Equal(t, "conv_1", got.ContextID)
	require.Len(t, got.Artifacts, 1)
	require.Len(t, got.Artifacts[0].Parts, 2)
	assert.Equal(t, "Looks good.", got.Artifacts[0].Parts[0].Text())
	assert.Equal(t, map[string]any{"bugs": float64(0)}, got.Artifacts[0].Parts[1].Data())
	require.Len(t, got.History, 1)
	assert.Equal(t, "Review it", got.History[0].Parts[0].Text())
	zero := 0
	assert.Empty(t, server.Task(done, &zero).History, "historyLength 0")
	failed := server.Task(tasks.Task{ID: "task_2", Status: tasks.TimedOut, Error: "no answer in 120 s"}, nil)
	assert.Empty(t, failed.Artifacts)
	require.NotNil(t, failed.Status.Message)
	assert.Contains(t, failed.Status.Message.Parts[0].Text(), "timed out")
}

func TestPublicCardShowsPublicSkillsOnly(t *testing.T) {
	w := newWorld()
	card, err := w.svc.PublicCard(teamA())
	require.NoError(t, err)
	assert.Equal(t, "Acme", card.Name)
	require.Len(t, card.Skills, 1, "public, and never internal_only")
	assert.Equal(t, "kyra.code-review", card.Skills[0].ID)
	assert.Equal(t, []string{"code"}, card.Skills[0].Tags)
	require.Len(t, card.SupportedInterfaces, 2)
	for i, version := range []a2a.ProtocolVersion{"1.0", "0.3"} {
		assert.Equal(t, "https://api.example/a2a/a2a_x", card.SupportedInterfaces[i].URL)
		assert.Equal(t, a2a.TransportProtocolJSONRPC, card.SupportedInterfaces[i].ProtocolBinding)
		assert.Equal(t, version, card.SupportedInterfaces[i].ProtocolVersion)
	}
	assert.False(t, card.Capabilities.Streaming)
	assert.True(t, card.Capabilities.ExtendedAgentCard)
	scheme, ok := card.SecuritySchemes[server.SecurityScheme].(a2a.APIKeySecurityScheme)
	require.True(t, ok)
	assert.Equal(t, "X-Api-Key", scheme.Name)
	extended, err := w.svc.GetExtendedAgentCard(teamA(), &a2a.GetExtendedAgentCardRequest{})
	require.NoError(t, err)
	var ids []string
	for _, s := range extended.Skills {
		ids = append(ids, s.ID)
	}
	assert.Equal(t, []string{"kyra.code-review", "kyra.triage"}, ids, "every skill but internal_only ones")
	_, err = w.svc.PublicCard(context.Background())
	assert.ErrorIs(t, err, a2a.ErrUnauthenticated, "no endpoint, no card")
}

func TestSendMessageRoutesAndRunsATask(t *testing.T) {
	w := newWorld()
	w.tasks.finish = func(t *tasks.Task) { t.Status, t.Result = tasks.Completed, "Two bugs." }
	res, err := w.svc.SendMessage(teamA(), &a2a.SendMessageRequest{Message: textMessage("Review this handler\nfor bugs")})
	require.NoError(t, err)
	task, ok := res.(*a2a.Task)
	require.True(t, ok, "always a task")
	assert.Equal(t, a2a.TaskStateCompleted, task.Status.State)
	assert.Equal(t, "conv_new", task.ContextID, "a message without contextId opens a conversation")
	assert.Equal(t, "Two bugs.", task.Artifacts[0].Parts[0].Text())
	require.Len(t, w.tasks.created, 1)
	in := w.tasks.created[0]
	assert.Equal(t, "kyra", in.Assignee, "the router's choice")
	assert.Equal(t, "Review this handler", in.Title)
	assert.Equal(t, "Review this handler\nfor bugs", in.Instructions)
	require.NotNil(t, in.Execute)
	assert.True(t, *in.Execute, "run by the delegation workflow")
	assert.Equal(t, 5*time.Second, w.tasks.waited, "waits the deadline")
}

func TestSendMessageAnswersWorkingPastTheDeadline(t *testing.T) {
	w := newWorld()
	w.tasks.finish = func(t *tasks.Task) { t.Status = tasks.Running }
	res, err := w.svc.SendMessage(teamA(), &a2a.SendMessageRequest{Message: textMessage("Slow work")})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateWorking, res.(*a2a.Task).Status.State)
	w.tasks.waited = 0
	res, err = w.svc.SendMessage(teamA(), &a2a.SendMessageRequest{Message: textMessage("Now"), Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateSubmitted, res.(*a2a.Task).Status.State)
	assert.Zero(t, w.tasks.waited, "returnImmediately does not wait")
}

func TestSendMessageRefusalsCreateNothing(t *testing.T) {
	w := newWorld()
	ctx := teamA()
	_, err := w.svc.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"a": 1}))})
	e, data := protocolErr(t, err)
	assert.ErrorIs(t, e, a2a.ErrInvalidParams)
	assert.Equal(t, "message.parts", data["field"])
	_, err = w.svc.SendMessage(ctx, &a2a.SendMessageRequest{Message: &a2a.Message{ContextID: "conv_of_team_b", Role: a2a.MessageRoleUser,
		Parts: a2a.ContentParts{a2a.NewTextPart("hi")}}})
	e, data = protocolErr(t, err)
	assert.ErrorIs(t, e, a2a.ErrInvalidParams)
	assert.Equal(t, "contextId", data["field"], "another team's conversation is no context of this agent")
	long := make([]rune, server.MaxMessage+1)
	for i := range long {
		long[i] = 'a'
	}
	_, err = w.svc.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage(string(long))})
	e, _ = protocolErr(t, err)
	assert.ErrorIs(t, e, a2a.ErrInvalidParams, "one past MaxMessage")
	assert.Zero(t, w.contexts.opened, "checked before a context is opened")
	w.tasks.refuse = apperr.New(apperr.ELIMIT, "kyra has 5 active tasks").WithReason("AgentTaskLimit")
	_, err = w.svc.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage(string(long[:server.MaxMessage]))})
	e, data = protocolErr(t, err)
	assert.ErrorIs(t, e, a2a.ErrUnsupportedOperation)
	assert.Equal(t, "AgentTaskLimit", data["reason"], "a limit refusal carries its reason")
	assert.Equal(t, apperr.ELIMIT, data["code"])
	assert.Equal(t, []string{string(long[:server.MaxMessage])}, w.router.asked, "exactly MaxMessage characters are routed")
	assert.Empty(t, w.tasks.created, "no task from any refusal")
	assert.Equal(t, 1, w.contexts.opened)
	assert.Equal(t, 1, w.contexts.discarded, "the context the refused message opened is closed again")
	_, err = w.svc.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: textMessage("hi")})
	assert.ErrorIs(t, err, a2a.ErrUnauthenticated)
}

func TestAMessageDecidesTheApprovalsATaskWaitsFor(t *testing.T) {
	w := newWorld()
	w.approvals.status["apr_1"] = approvals.Pending
	w.approvals.status["apr_2"] = approvals.Approved // decided already
	w.approvals.status["apr_3"] = approvals.Pending
	w.tasks.byID["task_1"] = tasks.Task{TeamID: "team_a", ID: "task_1", Status: tasks.Blocked, StatusReason: tasks.ReasonAwaitingApproval,
		ApprovalIDs: []string{"apr_1", "apr_2", "apr_3"}}
	ctx := teamA()
	reply := &a2a.Message{TaskID: "task_1", Role: a2a.MessageRoleUser, Parts: a2a.ContentParts{a2a.NewTextPart("ok")}}
	_, err := w.svc.SendMessage(ctx, &a2a.SendMessageRequest{Message: reply})
	e, _ := protocolErr(t, err)
	assert.ErrorIs(t, e, a2a.ErrInvalidParams, "a decision is a data part")
	assert.Empty(t, w.approvals.decided)
	reply.Parts = a2a.ContentParts{a2a.NewDataPart(map[string]any{"decision": "reject", "reason": "not now"})}
	w.tasks.finish = func(t *tasks.Task) {
		t.Status, t.StatusReason, t.ApprovalIDs, t.Result = tasks.Completed, "", nil, "Done."
	}
	res, err := w.svc.SendMessage(ctx, &a2a.SendMessageRequest{Message: reply})
	require.NoError(t, err)
	assert.Equal(t, map[string]approvals.DecideInput{
		"apr_1": {Decision: "reject", Reason: "not now"}, "apr_3": {Decision: "reject", Reason: "not now"},
	}, w.approvals.decided, "the task's own pending approvals, by id; the decided one left alone")
	assert.Equal(t, a2a.TaskStateCompleted, res.(*a2a.Task).Status.State)
	_, err = w.svc.SendMessage(ctx, &a2a.SendMessageRequest{Message: reply})
	e, _ = protocolErr(t, err)
	assert.ErrorIs(t, e, a2a.ErrUnsupportedOperation, "an ended task needs no input")
	// Blocked for approvals all decided since: nothing left to decide.
	w.tasks.byID["task_1"] = tasks.Task{TeamID: "team_a", ID: "task_1", Status: tasks.Blocked, StatusReason: tasks.ReasonAwaitingApproval,
		ApprovalIDs: []string{"apr_2"}}
	_, err = w.svc.SendMessage(ctx, &a2a.SendMessageRequest{Message: reply})
	_, data := protocolErr(t, err)
	assert.Equal(t, "NothingToDecide", data["reason"])
	assert.Len(t, w.approvals.decided, 2)
}

// The task is INPUT_REQUIRED one state before its approvals are written:
// a decision sent at once waits for them (a few reads), and one that
// never appears is not found after the bounded wait.
func TestADecisionWaitsForAnApprovalAboutToBeWritten(t *testing.T) {
	w := newWorld()
	w.approvals.status["apr_1"] = approvals.Pending
	w.approvals.late = 2
	w.tasks.byID["task_1"] = tasks.Task{TeamID: "team_a", ID: "task_1", Status: tasks.Blocked, StatusReason: tasks.ReasonAwaitingApproval,
		ApprovalIDs: []string{"apr_1"}}
	reply := &a2a.Message{TaskID: "task_1", Role: a2a.MessageRoleUser, Parts: a2a.ContentParts{a2a.NewDataPart(map[string]any{"decision": "approve"})}}
	cfg := &a2a.SendMessageConfig{ReturnImmediately: true}
	_, err := w.svc.SendMessage(teamA(), &a2a.SendMessageRequest{Message: reply, Config: cfg})
	require.NoError(t, err)
	assert.Equal(t, "approve", w.approvals.decided["apr_1"].Decision)
	assert.Equal(t, 3, w.approvals.reads)

	w.approvals.status = map[string]approvals.Status{}
	w.approvals.decided = map[string]approvals.DecideInput{}
	w.svc.ApprovalWait = 500 * time.Millisecond
	_, err = w.svc.SendMessage(teamA(), &a2a.SendMessageRequest{Message: reply, Config: cfg})
	e, _ := protocolErr(t, err)
	assert.ErrorIs(t, e, a2a.ErrTaskNotFound)
	assert.Empty(t, w.approvals.decided)
}

func TestABlockingSendEndsWhenTheTaskNeedsInput(t *testing.T) {
	w := newWorld()
	w.tasks.finish = func(t *tasks.Task) {
		t.Status, t.StatusReason, t.ApprovalIDs = tasks.Blocked, tasks.ReasonAwaitingApproval, []string{"apr_1"}
	}
	res, err := w.svc.SendMessage(teamA(), &a2a.SendMessageRequest{Message: textMessage("Ask luke")})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateInputRequired, res.(*a2a.Task).Status.State)
	assert.True(t, w.tasks.settled, "the wait's condition ends it at INPUT_REQUIRED, not at the deadline")
	w.tasks.finish = func(t *tasks.Task) { t.Status = tasks.Running }
	_, err = w.svc.SendMessage(teamA(), &a2a.SendMessageRequest{Message: textMessage("Slow")})
	require.NoError(t, err)
	assert.False(t, w.tasks.settled, "a running task does not end the wait")
}

func TestTheDeadlineLeavesTimeToAnswer(t *testing.T) {
	w := newWorld()
	ctx, cancel := context.WithTimeout(teamA(), 4*time.Second)
	defer cancel()
	_, err := w.svc.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("hi")})
	require.NoError(t, err)
	assert.Less(t, w.tasks.waited, 2*time.Second+time.Millisecond, "the invocation's deadline less 2 s to answer")
	assert.Greater(t, w.tasks.waited, time.Second)
}

func TestAnotherTeamsTasksAreNotFound(t *testing.T) {
	w := newWorld()
	w.tasks.byID["task_1"] = tasks.Task{TeamID: "team_b", ID: "task_1", Status: tasks.Running}
	ctx := teamA()
	_, err := w.svc.GetTask(ctx, &a2a.GetTaskRequest{ID: "task_1"})
	assert.ErrorIs(t, err, a2a.ErrTaskNotFound)
	_, err = w.svc.CancelTask(ctx, &a2a.CancelTaskRequest{ID: "task_1"})
	assert.ErrorIs(t, err, a2a.ErrTaskNotFound)
	list, err := w.svc.ListTasks(ctx, &a2a.ListTasksRequest{})
	require.NoError(t, err)
	assert.Empty(t, list.Tasks)
	assert.Equal(t, tasks.Running, w.tasks.byID["task_1"].Status, "untouched")
}

func TestListTasksFiltersAndBoundsItsPages(t *testing.T) {
	w := newWorld()
	w.tasks.byID["task_1"] = tasks.Task{TeamID: "team_a", ID: "task_1", ConversationID: "conv_a", Status: tasks.Completed}
	w.tasks.byID["task_2"] = tasks.Task{TeamID: "team_a", ID: "task_2", ConversationID: "conv_b", Status: tasks.Running}
	ctx := teamA()
	list, err := w.svc.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: "conv_a"})
	require.NoError(t, err)
	require.Len(t, list.Tasks, 1)
	assert.Equal(t, a2a.TaskID("task_1"), list.Tasks[0].ID)
	assert.Equal(t, 25, list.PageSize, "the default page")
	list, err = w.svc.ListTasks(ctx, &a2a.ListTasksRequest{Status: a2a.TaskStateWorking, PageSize: server.MaxPageSize})
	require.NoError(t, err)
	require.Len(t, list.Tasks, 1)
	assert.Equal(t, a2a.TaskID("task_2"), list.Tasks[0].ID)
	_, err = w.svc.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: server.MaxPageSize + 1})
	assert.ErrorIs(t, err, a2a.ErrInvalidParams)
}

func TestCancelStopsARunningTaskOnly(t *testing.T) {
	w := newWorld()
	w.tasks.byID["task_1"] = tasks.Task{TeamID: "team_a", ID: "task_1", Status: tasks.Running}
	got, err := w.svc.CancelTask(teamA(), &a2a.CancelTaskRequest{ID: "task_1"})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateCanceled, got.Status.State)
	_, err = w.svc.CancelTask(teamA(), &a2a.CancelTaskRequest{ID: "task_1"})
	assert.ErrorIs(t, err, a2a.ErrTaskNotCancelable)
}

func TestPushNotificationsAreNotOffered(t *testing.T) {
	w := newWorld()
	_, err := w.svc.CreateTaskPushConfig(teamA(), &a2a.PushConfig{})
	assert.ErrorIs(t, err, a2a.ErrPushNotificationNotSupported)
	_, err = w.svc.ListTaskPushConfigs(teamA(), &a2a.ListTaskPushConfigRequest{})
	assert.ErrorIs(t, err, a2a.ErrPushNotificationNotSupported)
	_, err = w.svc.GetTaskPushConfig(teamA(), &a2a.GetTaskPushConfigRequest{})
	assert.ErrorIs(t, err, a2a.ErrPushNotificationNotSupported)
	assert.ErrorIs(t, w.svc.DeleteTaskPushConfig(teamA(), &a2a.DeleteTaskPushConfigRequest{}), a2a.ErrPushNotificationNotSupported)
	for _, stream := range []func(yield func(a2a.Event, error) bool){
		w.svc.SendStreamingMessage(teamA(), &a2a.SendMessageRequest{}), w.svc.SubscribeToTask(teamA(), &a2a.SubscribeToTaskRequest{}),
	} {
		n := 0
		for _, err := range stream {
			n++
			assert.ErrorIs(t, err, a2a.ErrUnsupportedOperation)
		}
		assert.Equal(t, 1, n, "one event: the error")
	}
}
