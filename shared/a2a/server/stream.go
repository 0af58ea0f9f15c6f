package server

import (
	"context"
	"iter"
	"slices"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// DefaultStreamLimit is how long a stream follows its task: API Gateway
// ends a streamed response after 15 minutes, so the stream closes a
// minute before, cleanly; a client that still wants the task subscribes
// again (SubscribeToTask).
const DefaultStreamLimit = 14 * time.Minute

// streamReserve is what a stream leaves of the caller's deadline to end
// its response (on the HTTP API the whole stream is one answer, which
// must be written before the function's time is up).
const streamReserve = 2 * time.Second

// SendStreamingMessage implements a2asrv.RequestHandler: the message is
// sent as SendMessage sends it (a new task, or the decision of the
// approvals a task waits for), and the answer is the task's events as it
// runs: the task first, then a status update on each change of its state
// and, when it completes, its answer as an artifact update before the
// final status. The stream ends when the task ends or stops for input
// anew, or at the stream's limit (DefaultStreamLimit, the caller's
// deadline). Errors: those of SendMessage, before any event.
func (s *Service) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		e, err := s.streaming(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		if req == nil || req.Message == nil {
			yield(nil, invalid("message", "message is required"))
			return
		}
		var t tasks.Task
		if req.Message.TaskID != "" {
			t, _, err = s.decide(ctx, e, req)
		} else {
			t, err = s.start(ctx, e, req)
		}
		if err != nil {
			yield(nil, err)
			return
		}
		var history *int
		if req.Config != nil {
			history = req.Config.HistoryLength
		}
		s.follow(ctx, t, history, yield)
	}
}

// SubscribeToTask implements a2asrv.RequestHandler: the task as it is,
// then its events as SendStreamingMessage streams them. An ended task has
// nothing more to stream (UnsupportedOperation, reason TaskEnded: GetTask
// reads it); another team's task is not found.
func (s *Service) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		e, err := s.streaming(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		if req == nil || req.ID == "" {
			yield(nil, invalid("id", "id is required"))
			return
		}
		t, err := s.Tasks.Get(ctx, e.TeamID, string(req.ID))
		if err != nil {
			yield(nil, protocolError(err))
			return
		}
		if t.Status.Terminal() {
			yield(nil, a2a.NewError(a2a.ErrUnsupportedOperation, "the task has ended ("+string(State(t))+"): GetTask reads it").
				WithDetails(map[string]any{"code": apperr.ECONFLICT, "reason": "TaskEnded"}))
			return
		}
		s.follow(ctx, t, nil, yield)
	}
}

// streaming is the endpoint of ctx, where the stage streams.
func (s *Service) streaming(ctx context.Context) (Endpoint, error) {
	e, ok := endpoint(ctx)
	if !ok {
		return e, a2a.ErrUnauthenticated
	}
	if e.StreamURL == "" {
		return e, a2a.NewError(a2a.ErrUnsupportedOperation, "streaming is not offered on this stage: the card says streaming: false")
	}
	return e, nil
}

// follow yields t, then its changes as events, reading the task as
// SendMessage's wait does (the task model's poll, quick first, at most a
// read a second), until it ends, stops for input it did not stop for when
// the stream began (a decision's stream starts at INPUT_REQUIRED), the
// stream's limit passes or the client goes away.
func (s *Service) follow(ctx context.Context, t tasks.Task, history *int, yield func(a2a.Event, error) bool) {
	if !yield(Task(t, history), nil) || t.Status.Terminal() {
		return
	}
	waited := slices.Clone(t.ApprovalIDs)
	limit := s.StreamLimit
	if limit <= 0 {
		limit = DefaultStreamLimit
	}
	until := time.Now().Add(limit)
	if dl, ok := ctx.Deadline(); ok && dl.Add(-streamReserve).Before(until) {
		until = dl.Add(-streamReserve)
	}
	last := t
	for ctx.Err() == nil {
		left := time.Until(until)
		if left <= 0 {
			return
		}
		next, err := s.Tasks.WaitUntil(ctx, t.TeamID, t.ID, left, func(n tasks.Task) bool { return changed(last, n) })
		if err != nil {
			if ctx.Err() == nil {
				yield(nil, protocolError(err))
			}
			return
		}
		if !changed(last, next) {
			continue // the wait's time is up, or ctx's
		}
		for _, ev := range updates(last, next) {
			if !yield(ev, nil) {
				return
			}
		}
		last = next
		if next.Status.Terminal() || (State(next) == a2a.TaskStateInputRequired &&
			slices.ContainsFunc(next.ApprovalIDs, func(id string) bool { return !slices.Contains(waited, id) })) {
			return
		}
	}
}

// changed: b is a new state of the task a was, as A2A shows it (its state,
// what its status says, the approvals it waits for).
func changed(a, b tasks.Task) bool {
	return a.Status != b.Status || a.StatusReason != b.StatusReason || State(a) != State(b) || !slices.Equal(a.ApprovalIDs, b.ApprovalIDs)
}

// updates are the events from a to b: the run the looks missed (ran),
// the answer's artifact when the task has just completed, then b's
// status.
func updates(a, b tasks.Task) []a2a.Event {
	now := Task(b, new(int))
	out := ran(a, b, now)
	if b.Status == tasks.Completed && a.Status != tasks.Completed {
		for _, art := range now.Artifacts {
			out = append(out, &a2a.TaskArtifactUpdateEvent{TaskID: now.ID, ContextID: now.ContextID, Artifact: art, LastChunk: true})
		}
	}
	return append(out, &a2a.TaskStatusUpdateEvent{TaskID: now.ID, ContextID: now.ContextID, Status: now.Status, Metadata: now.Metadata})
}

// ran is the WORKING status the task had between a and b when neither
// look saw it (a quick task is queued at one look and done at the next):
// its timeline (b.Events, read with each change) records the start or
// resumption after a's last entry.
func ran(a, b tasks.Task, now *a2a.Task) []a2a.Event {
	if State(a) == a2a.TaskStateWorking || State(b) == a2a.TaskStateWorking {
		return nil
	}
	seen := 0
	for _, ev := range a.Events {
		seen = max(seen, ev.Seq)
	}
	for _, ev := range b.Events {
		if ev.Seq > seen && (ev.Type == tasks.EvStarted || ev.Type == tasks.EvResumed) {
			at := ev.At
			return []a2a.Event{&a2a.TaskStatusUpdateEvent{TaskID: now.ID, ContextID: now.ContextID,
				Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: &at}, Metadata: map[string]any{"conclave_status": string(tasks.Running)}}}
		}
	}
	return nil
}
