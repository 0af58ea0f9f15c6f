package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/a2a/server"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// streamingA is team_a's endpoint on a stage with a streaming API.
func streamingA() context.Context {
	return server.With(context.Background(), server.Endpoint{TeamID: "team_a",
		BaseURL: "https://api.example/a2a/a2a_x", StreamURL: "https://stream.example/dev/a2a/a2a_x"})
}

// script makes each wait of the task model the task's next state (the
// fake's waits return at once); once the steps are used up, a wait changes
// nothing.
func script(steps ...func(t *tasks.Task)) func(t *tasks.Task) {
	i := 0
	return func(t *tasks.Task) {
		if i < len(steps) {
			steps[i](t)
			i++
		}
	}
}

func running(t *tasks.Task) { t.Status = tasks.Running }

func completed(t *tasks.Task) { t.Status, t.Result = tasks.Completed, "Two bugs." }

func awaiting(ids ...string) func(t *tasks.Task) {
	return func(t *tasks.Task) {
		t.Status, t.StatusReason, t.ApprovalIDs = tasks.Blocked, tasks.ReasonAwaitingApproval, ids
	}
}

// event is what a test reads of a streamed event.
type event struct {
	kind  string // task, status, artifact, error
	state a2a.TaskState
	text  string
	err   error
}

func collect(seq func(yield func(a2a.Event, error) bool)) []event {
	var out []event
	for ev, err := range seq {
		switch e := ev.(type) {
		case nil:
			out = append(out, event{kind: "error", err: err})
		case *a2a.Task:
			out = append(out, event{kind: "task", state: e.Status.State})
		case *a2a.TaskStatusUpdateEvent:
			out = append(out, event{kind: "status", state: e.Status.State})
		case *a2a.TaskArtifactUpdateEvent:
			out = append(out, event{kind: "artifact", text: e.Artifact.Parts[0].Text()})
		}
	}
	return out
}

func TestAStreamedMessageFollowsItsTaskToItsAnswer(t *testing.T) {
	w := newWorld()
	w.tasks.finish = script(running, func(t *tasks.Task) { t.Status, t.StatusReason = tasks.Blocked, "awaiting_subtasks" }, completed)
	got := collect(w.svc.SendStreamingMessage(streamingA(), &a2a.SendMessageRequest{Message: textMessage("Review this handler")}))
	assert.Equal(t, []event{
		{kind: "task", state: a2a.TaskStateSubmitted},
		{kind: "status", state: a2a.TaskStateWorking},
		{kind: "status", state: a2a.TaskStateWorking}, // blocked on a sub-task: still working, its metadata says why
		{kind: "artifact", text: "Two bugs."},
		{kind: "status", state: a2a.TaskStateCompleted},
	}, got, "in order, the answer before the final status, and the stream ends there")
	require.Len(t, w.tasks.created, 1, "routed and run as SendMessage runs it")
	assert.Equal(t, "kyra", w.tasks.created[0].Assignee)
}

func TestAStreamShowsTheRunItsLooksMissed(t *testing.T) {
	w := newWorld()
	// Queued at one look, done at the next: the timeline says it ran.
	w.tasks.finish = script(func(t *tasks.Task) {
		completed(t)
		t.Events = []tasks.Event{{Seq: 1, Type: tasks.EvCreated}, {Seq: 2, Type: tasks.EvStarted, At: time.Unix(200, 0)}, {Seq: 3, Type: tasks.EvCompleted}}
	})
	var started *a2a.TaskStatusUpdateEvent
	var got []event
	for ev, err := range w.svc.SendStreamingMessage(streamingA(), &a2a.SendMessageRequest{Message: textMessage("Quick one")}) {
		require.NoError(t, err)
		if s, ok := ev.(*a2a.TaskStatusUpdateEvent); ok && started == nil {
			started = s
		}
		got = append(got, collect(func(yield func(a2a.Event, error) bool) { yield(ev, nil) })...)
	}
	assert.Equal(t, []event{
		{kind: "task", state: a2a.TaskStateSubmitted},
		{kind: "status", state: a2a.TaskStateWorking},
		{kind: "artifact", text: "Two bugs."},
		{kind: "status", state: a2a.TaskStateCompleted},
	}, got)
	require.NotNil(t, started)
	assert.Equal(t, time.Unix(200, 0), *started.Status.Timestamp, "when it started, from its timeline")
}

func TestAStreamCarriesTheStatusMetadataAndEndsAtAFailure(t *testing.T) {
	w := newWorld()
	w.tasks.finish = script(running, func(t *tasks.Task) { t.Status, t.Error = tasks.Failed, "the model gave up" })
	var last *a2a.TaskStatusUpdateEvent
	for ev, err := range w.svc.SendStreamingMessage(streamingA(), &a2a.SendMessageRequest{Message: textMessage("Hard work")}) {
		require.NoError(t, err)
		if s, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
			last = s
		}
	}
	require.NotNil(t, last)
	assert.Equal(t, a2a.TaskStateFailed, last.Status.State)
	assert.Equal(t, "the model gave up", last.Status.Message.Parts[0].Text())
	assert.Equal(t, "failed", last.Metadata["conclave_status"])
	assert.Equal(t, "task_1", string(last.TaskID))
	assert.Equal(t, "conv_new", last.ContextID)
}

func TestAStreamEndsWhenTheTaskNeedsInput(t *testing.T) {
	w := newWorld()
	w.tasks.finish = script(running, awaiting("apr_1"), completed)
	got := collect(w.svc.SendStreamingMessage(streamingA(), &a2a.SendMessageRequest{Message: textMessage("Ask luke")}))
	assert.Equal(t, []event{
		{kind: "task", state: a2a.TaskStateSubmitted},
		{kind: "status", state: a2a.TaskStateWorking},
		{kind: "status", state: a2a.TaskStateInputRequired},
	}, got, "an interrupted state ends the stream: the client answers it")
}

func TestAStreamedDecisionFollowsTheTaskFromItsInterruption(t *testing.T) {
	w := newWorld()
	w.tasks.byID["task_1"] = tasks.Task{TeamID: "team_a", ID: "task_1", ConversationID: "conv_a", Status: tasks.Blocked,
		StatusReason: tasks.ReasonAwaitingApproval, ApprovalIDs: []string{"apr_1"}}
	w.approvals.status["apr_1"] = approvals.Pending
	// The execution resumes a moment after the decision: the first look
	// still shows the approval decided.
	w.tasks.finish = script(awaiting("apr_1"), running, completed)
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"decision": "approve"}))
	msg.TaskID = "task_1"
	got := collect(w.svc.SendStreamingMessage(streamingA(), &a2a.SendMessageRequest{Message: msg}))
	assert.Equal(t, []event{
		{kind: "task", state: a2a.TaskStateInputRequired},
		{kind: "status", state: a2a.TaskStateWorking},
		{kind: "artifact", text: "Two bugs."},
		{kind: "status", state: a2a.TaskStateCompleted},
	}, got, "the interruption it started from does not end it")
	assert.Equal(t, "approve", w.approvals.decided["apr_1"].Decision)
}

func TestSubscribeToTaskStreamsTheTaskThenItsChanges(t *testing.T) {
	w := newWorld()
	w.tasks.byID["task_1"] = tasks.Task{TeamID: "team_a", ID: "task_1", ConversationID: "conv_a", Status: tasks.Running}
	w.tasks.finish = script(completed)
	got := collect(w.svc.SubscribeToTask(streamingA(), &a2a.SubscribeToTaskRequest{ID: "task_1"}))
	assert.Equal(t, []event{
		{kind: "task", state: a2a.TaskStateWorking},
		{kind: "artifact", text: "Two bugs."},
		{kind: "status", state: a2a.TaskStateCompleted},
	}, got)

	// An ended task has nothing more to stream.
	got = collect(w.svc.SubscribeToTask(streamingA(), &a2a.SubscribeToTaskRequest{ID: "task_1"}))
	require.Len(t, got, 1)
	e, data := protocolErr(t, got[0].err)
	assert.ErrorIs(t, e, a2a.ErrUnsupportedOperation)
	assert.Equal(t, "TaskEnded", data["reason"])
}

func TestAnotherTeamsTaskCannotBeSubscribedTo(t *testing.T) {
	w := newWorld()
	w.tasks.byID["task_1"] = tasks.Task{TeamID: "team_b", ID: "task_1", Status: tasks.Running}
	got := collect(w.svc.SubscribeToTask(streamingA(), &a2a.SubscribeToTaskRequest{ID: "task_1"}))
	require.Len(t, got, 1, "an error and nothing else")
	assert.ErrorIs(t, got[0].err, a2a.ErrTaskNotFound)
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"decision": "approve"}))
	msg.TaskID = "task_1"
	got = collect(w.svc.SendStreamingMessage(streamingA(), &a2a.SendMessageRequest{Message: msg}))
	require.Len(t, got, 1)
	assert.ErrorIs(t, got[0].err, a2a.ErrTaskNotFound)
	got = collect(w.svc.SubscribeToTask(streamingA(), &a2a.SubscribeToTaskRequest{}))
	require.Len(t, got, 1)
	assert.ErrorIs(t, got[0].err, a2a.ErrInvalidParams)
}

func TestARefusedStreamedMessageIsAnErrorAndCreatesNothing(t *testing.T) {
	w := newWorld()
	w.tasks.refuse = apperr.New(apperr.ELIMIT, "the team's task budget is spent").WithReason("TaskBudget")
	got := collect(w.svc.SendStreamingMessage(streamingA(), &a2a.SendMessageRequest{Message: textMessage("Work")}))
	require.Len(t, got, 1, "the error, before any event")
	e, data := protocolErr(t, got[0].err)
	assert.ErrorIs(t, e, a2a.ErrUnsupportedOperation)
	assert.Equal(t, "TaskBudget", data["reason"])
	assert.Equal(t, 1, w.contexts.discarded, "the context it opened is closed again")
	got = collect(w.svc.SendStreamingMessage(streamingA(), &a2a.SendMessageRequest{Message: textMessage("")}))
	require.Len(t, got, 1)
	assert.ErrorIs(t, got[0].err, a2a.ErrInvalidParams)
}

func TestStreamingNeedsTheStreamingAPI(t *testing.T) {
	w := newWorld()
	for name, ctx := range map[string]context.Context{"no streaming API": teamA(), "no endpoint": context.Background()} {
		got := collect(w.svc.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("hi")}))
		require.Len(t, got, 1, name)
		assert.Error(t, got[0].err, name)
		got = collect(w.svc.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: "task_1"}))
		require.Len(t, got, 1, name)
		assert.Error(t, got[0].err, name)
	}
	got := collect(w.svc.SendStreamingMessage(teamA(), &a2a.SendMessageRequest{Message: textMessage("hi")}))
	assert.ErrorIs(t, got[0].err, a2a.ErrUnsupportedOperation, "the card says streaming: false")
	assert.Empty(t, w.tasks.created)

	card, err := w.svc.PublicCard(streamingA())
	require.NoError(t, err)
	assert.True(t, card.Capabilities.Streaming)
	var ifaces [][2]string
	for _, i := range card.SupportedInterfaces {
		assert.Equal(t, a2a.TransportProtocolJSONRPC, i.ProtocolBinding)
		ifaces = append(ifaces, [2]string{i.URL, string(i.ProtocolVersion)})
	}
	assert.Equal(t, [][2]string{
		{"https://stream.example/dev/a2a/a2a_x", "1.0"}, {"https://api.example/a2a/a2a_x", "1.0"},
		{"https://stream.example/dev/a2a/a2a_x", "0.3"}, {"https://api.example/a2a/a2a_x", "0.3"},
	}, ifaces, "the streaming endpoint first: a client takes the first interface of its version for every call")
}

func TestAStreamClosesAtItsLimit(t *testing.T) {
	w := newWorld()
	w.svc.StreamLimit = 50 * time.Millisecond
	w.tasks.finish = func(t *tasks.Task) { t.Status = tasks.Running; time.Sleep(5 * time.Millisecond) }
	start := time.Now()
	got := collect(w.svc.SendStreamingMessage(streamingA(), &a2a.SendMessageRequest{Message: textMessage("Slow")}))
	assert.Equal(t, []event{{kind: "task", state: a2a.TaskStateSubmitted}, {kind: "status", state: a2a.TaskStateWorking}}, got)
	assert.Less(t, time.Since(start), time.Second)

	// The caller's deadline, less the time to end the answer, shortens it.
	w.svc.StreamLimit = 0
	ctx, cancel := context.WithTimeout(streamingA(), 2100*time.Millisecond)
	defer cancel()
	start = time.Now()
	got = collect(w.svc.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("Slow")}))
	assert.Less(t, time.Since(start), time.Second)
	assert.Len(t, got, 2)
}

func TestAStreamEndsWhenItsClientGoesAway(t *testing.T) {
	w := newWorld()
	w.tasks.finish = func(t *tasks.Task) { t.Status = tasks.Running; time.Sleep(time.Millisecond) }
	ctx, cancel := context.WithCancel(streamingA())
	defer cancel()
	n := 0
	for range w.svc.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("Slow")}) {
		if n++; n == 2 {
			cancel()
		}
	}
	assert.Equal(t, 2, n)
}
