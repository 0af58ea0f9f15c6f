// Package streamsapi is the streaming API's routes (docs/streaming.md): a
// chat turn answered as Server-Sent Events while it runs, and the
// resumable event streams of a conversation, a session and a plan.
package streamsapi

import (
	"context"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/answerby"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
)

// The events of a streamed turn.
const (
	EventRouting    = "routing"
	EventDelta      = "delta"
	EventToolCall   = "tool_call"
	EventToolResult = "tool_result"
	EventReply      = "reply"
	EventDone       = "done"
	EventError      = "error"
)

// Turns is the chat service a streamed turn runs on.
type Turns interface {
	Get(ctx context.Context, teamID, id string) (conversations.Conversation, error)
	Post(ctx context.Context, teamID, convID string, in conversations.PostInput) (conversations.PostResult, error)
}

// TurnRoute serves POST /v1/conversations/{id}/messages on the streaming
// API. With Accept: text/event-stream the turn is answered as events while
// it runs; without, as the HTTP API answers it (201 and the turn). A
// request refused before the turn starts (a bad body, an unknown
// conversation, a flag, the team's rate) is the usual JSON error; once the
// events have started, an error is an error event.
//
// The turn runs exactly as on the HTTP API, with the same deadline (limit:
// the conversations function's timeout less the answer's reserve), and is
// committed whether or not the client still reads: a client that goes
// away loses nothing but the events.
func TurnRoute(rt *httpapi.Router, svc Turns, limit time.Duration) {
	rt.Handle("POST /v1/conversations/{id}/messages", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in conversations.PostInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		in.UserKey = api.Actor(r)
		if !AcceptsEvents(r) {
			tctx, cancel := turnContext(ctx, limit)
			defer cancel()
			res, err := svc.Post(idempotency.Scope(tctx, conversations.RefKind), r.TeamID, r.Param("id"), in)
			if err != nil {
				return httpapi.Response{}, err
			}
			return httpapi.Created(res), nil
		}
		if err := in.Check(); err != nil {
			return httpapi.Response{}, err
		}
		if _, err := svc.Get(ctx, r.TeamID, r.Param("id")); err != nil {
			return httpapi.Response{}, err
		}
		// The key, scoped as the HTTP API's turn scopes it, goes with the
		// body: the body runs on the invocation's context, not this one.
		key := idempotency.KeyFor(idempotency.Scope(ctx, conversations.RefKind), conversations.RefKind)
		return httpapi.Response{Status: 200, Body: &turnStream{svc: svc, r: r, in: in, limit: limit, key: key}}, nil
	})
}

// AcceptsEvents says whether the request asks for Server-Sent Events.
func AcceptsEvents(r *httpapi.Request) bool {
	return strings.Contains(strings.ToLower(r.Event.Headers["accept"]), "text/event-stream")
}

// turnContext is the turn's own deadline: the chat turn's, not the
// streaming function's 15 minutes.
func turnContext(ctx context.Context, limit time.Duration) (context.Context, context.CancelFunc) {
	tctx, cancel := context.WithTimeout(ctx, limit)
	if dl, ok := tctx.Deadline(); ok {
		tctx = answerby.With(tctx, dl)
	}
	return tctx, cancel
}

// turnStream is a streamed turn's body.
type turnStream struct {
	svc   Turns
	r     *httpapi.Request
	in    conversations.PostInput
	limit time.Duration
	key   string
}

func (t *turnStream) ContentType() string { return "text/event-stream" }

func (t *turnStream) WriteTo(ctx context.Context, w io.Writer) {
	out := newPump(w)
	defer out.Close()
	sse := streams.NewSSE(out)
	watch := &turnWatcher{sse: sse, said: map[string]*strings.Builder{}}
	t.in.Watch = watch
	// Detached from the invocation: whatever becomes of the client (and
	// of the context with it), the turn runs to its own deadline.
	tctx, cancel := turnContext(context.WithoutCancel(ctx), t.limit)
	defer cancel()
	if t.key != "" {
		tctx = idempotency.Scope(idempotency.WithKey(tctx, t.key), conversations.RefKind)
	}
	stop := keepAlive(tctx, sse)
	res, err := t.svc.Post(tctx, t.r.TeamID, t.r.Param("id"), t.in)
	stop()
	if err != nil {
		eb, status := t.r.ErrorOf(err)
		_ = sse.Send("", EventError, errorEvent{ErrorBody: eb, Status: status})
		return
	}
	if !res.Replayed {
		// A replayed turn answers only done: nothing ran.
		for _, m := range res.Replies {
			watch.finish(m)
			_ = sse.Send("", EventReply, m)
		}
	}
	_ = sse.Send("", EventDone, res)
}

// errorEvent is an error event's data: the API's error shape with the
// status the error would have had before the stream started.
type errorEvent struct {
	httpapi.ErrorBody
	Status int `json:"status"`
}

// keepAlive writes a comment every streams.KeepAlive until stopped.
func keepAlive(ctx context.Context, sse *streams.SSE) (stop func()) {
	done := make(chan struct{})
	var once sync.Once
	go func() {
		tick := time.NewTicker(streams.KeepAlive)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = sse.Comment("keep-alive")
			}
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}

// turnWatcher writes what a turn's watcher sees as events, and keeps each
// message's text so far so that its deltas end as the stored reply does.
type turnWatcher struct {
	sse  *streams.SSE
	mu   sync.Mutex
	said map[string]*strings.Builder
}

func (w *turnWatcher) Routed(d cascade.Decision) { _ = w.sse.Send("", EventRouting, d) }

func (w *turnWatcher) Delta(d conversations.Delta) {
	w.mu.Lock()
	b, ok := w.said[d.MessageID]
	if !ok {
		b = &strings.Builder{}
		w.said[d.MessageID] = b
	}
	b.WriteString(d.Text)
	w.mu.Unlock()
	_ = w.sse.Send("", EventDelta, d)
}

func (w *turnWatcher) ToolCalled(t conversations.ToolEvent)   { _ = w.sse.Send("", EventToolCall, t) }
func (w *turnWatcher) ToolAnswered(t conversations.ToolEvent) { _ = w.sse.Send("", EventToolResult, t) }

// finish writes the last delta of a stored message: what the turn added
// after the model's last word (a note of work still running), or the
// whole text of a message no model streamed (a synthesis, a kind skill's
// answer, a system note), so that a message's deltas concatenate to it.
func (w *turnWatcher) finish(m conversations.Message) {
	w.mu.Lock()
	so := ""
	if b, ok := w.said[m.ID]; ok {
		so = b.String()
	}
	w.mu.Unlock()
	rest, ok := strings.CutPrefix(m.Content, so)
	if !ok || rest == "" {
		// !ok cannot happen (the reply begins with what the model
		// wrote, spoken); the reply event is the stored text either way.
		return
	}
	w.Delta(conversations.Delta{MessageID: m.ID, Agent: m.Agent, Text: rest})
}
