package streamsapi

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/streams"
)

// Timing of the event streams.
const (
	// PollEvery is how often an open stream reads its new events: one
	// Query of the stream's own key range, so an idle stream costs one
	// read a second.
	PollEvery = time.Second
	// MaxStream is how long one response streams: below the function's
	// 15 minutes, so it always ends in its own close; the client resumes
	// with Last-Event-ID and misses nothing.
	MaxStream = 14 * time.Minute
	// pageSize bounds one read of a stream.
	pageSize = 100
)

// Run is what an event stream needs of the run it tells of: ENOTFOUND for
// an id the team does not have (another team's among them), and whether it
// has ended (its stream then closes once it has sent every event).
type Run func(ctx context.Context, teamID, id string) (ended bool, err error)

// Stream is one kind of event stream: its route, its stream's name for an
// id, and its run. FromNow starts a stream without Last-Event-ID at its
// present end (a conversation's) rather than at its beginning (a run's).
type Stream struct {
	Route   string
	Name    func(id string) string
	Run     Run
	FromNow bool
}

// EventRoutes serves each stream's GET …/events on the streaming API.
func EventRoutes(rt *httpapi.Router, log streams.Reader, kinds ...Stream) {
	for _, k := range kinds {
		rt.Handle(k.Route, func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
			id := r.Param("id")
			ended, err := k.Run(ctx, r.TeamID, id)
			if err != nil {
				return httpapi.Response{}, err
			}
			name := k.Name(id)
			after := int64(0)
			if v, ok := r.Event.Headers["last-event-id"]; ok {
				n, valid := streams.ParseLastEventID(v)
				if !valid {
					return httpapi.Response{}, apperr.Invalid("Last-Event-ID", "Last-Event-ID must be an event id of this stream (a whole number from 0)")
				}
				after = n
			} else if k.FromNow {
				if after, err = log.StreamHead(ctx, r.TeamID, name); err != nil {
					return httpapi.Response{}, err
				}
			}
			if ended {
				// A run that has ended and whose events the client has
				// all: 204, which tells an EventSource not to reconnect.
				head, err := log.StreamHead(ctx, r.TeamID, name)
				if err != nil {
					return httpapi.Response{}, err
				}
				if after >= head {
					return httpapi.NoContent(), nil
				}
			}
			return httpapi.Response{Status: http.StatusOK, Body: &eventStream{log: log, run: k.Run, team: r.TeamID, id: id, name: name, after: after}}, nil
		})
	}
}

// eventStream is an event stream's body.
type eventStream struct {
	log            streams.Reader
	run            Run
	team, id, name string
	after          int64
}

func (e *eventStream) ContentType() string { return "text/event-stream" }

// WriteTo sends the stream's events after e.after as they are stored, a
// comment when it has been idle for streams.KeepAlive, and ends when the
// run has ended and every event is sent, or after MaxStream.
func (e *eventStream) WriteTo(ctx context.Context, w io.Writer) {
	sse := streams.NewSSE(w)
	ctx, cancel := context.WithTimeout(ctx, MaxStream)
	defer cancel()
	lastWrite := time.Now()
	for {
		// Whether the run had ended is read before its events: an end
		// committed after this read is found by the next round, and
		// every event committed before it is in this one's read.
		ended, err := e.run(ctx, e.team, e.id)
		if err != nil {
			return
		}
		for {
			evs, err := e.log.StreamEvents(ctx, e.team, e.name, e.after, pageSize)
			if err != nil {
				return
			}
			for _, ev := range evs {
				if sse.SendEvent(ev) != nil {
					return
				}
				e.after, lastWrite = ev.Seq, time.Now()
			}
			if len(evs) < pageSize {
				break
			}
		}
		if ended {
			return
		}
		if time.Since(lastWrite) >= streams.KeepAlive {
			if sse.Comment("keep-alive") != nil {
				return
			}
			lastWrite = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(PollEvery):
		}
	}
}
