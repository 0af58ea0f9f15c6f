// Package streams holds the resumable event streams of a run (a session, a
// plan) and of a conversation (architecture decision 10), and the
// Server-Sent Events they and a streamed chat turn are written as.
//
// An event of a stream is an EventBridge detail of the project's schemas
// (events/schemas: SessionStatusChanged, SessionStageCompleted,
// MessagePosted, …) with a sequence number of its stream, assigned in the
// very transaction that stores the change it tells of: the stream has
// every change once, in order, numbered 1, 2, 3 … without a gap, so a
// client that resumes after n (Last-Event-ID) misses nothing and sees
// nothing twice.
package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Event is one event of a stream.
type Event struct {
	// Seq numbers the stream's events from 1, without a gap.
	Seq int64 `json:"seq"`
	// Type is the detail type (events/schemas).
	Type string    `json:"type"`
	At   time.Time `json:"at"`
	// Detail is the event's detail, valid against its schema.
	Detail json.RawMessage `json:"detail"`
}

// Reader reads a stream's events.
type Reader interface {
	// StreamEvents returns up to limit events of the team's stream with a
	// sequence number above after, in order; none for a stream that has
	// none or is another team's.
	StreamEvents(ctx context.Context, teamID, stream string, after int64, limit int) ([]Event, error)
	// StreamHead is the stream's last sequence number (0: no event yet).
	StreamHead(ctx context.Context, teamID, stream string) (int64, error)
}

// Names of the streams.
func Session(id string) string      { return "session#" + id }
func Plan(id string) string         { return "plan#" + id }
func Conversation(id string) string { return "conv#" + id }

// New is an event of the given detail (marshalled) for a writer to number.
func New(detailType string, at time.Time, detail any) (Event, error) {
	raw, err := json.Marshal(detail)
	if err != nil {
		return Event{}, err
	}
	return Event{Type: detailType, At: at.UTC(), Detail: raw}, nil
}

// Retention is how long a stream keeps an event: the store gives every
// event an expiry (TTL) this long after it happened. A client resuming
// after that reads from the oldest event kept.
const Retention = 30 * 24 * time.Hour

// Number gives evs the sequence numbers after head, in order, and returns
// the stream's new head: what a change writes as its owner's counter
// (event_seq) with its events.
func Number(head int64, evs []Event) int64 {
	for i := range evs {
		evs[i].Seq = head + int64(i) + 1
	}
	return head + int64(len(evs))
}

// ErrNumbering is a change whose events are not numbered head−len+1 …
// head: a programming error of its writer, refused before anything is
// written.
var ErrNumbering = errors.New("the events are not numbered up to the owner's new event_seq")

// CheckNumbered reports whether evs are the last len(evs) numbers up to
// head, in order (ErrNumbering otherwise), as Number leaves them.
func CheckNumbered(head int64, evs []Event) error {
	first := head - int64(len(evs)) + 1
	for i, ev := range evs {
		if ev.Seq != first+int64(i) || ev.Seq < 1 {
			return fmt.Errorf("%w: event %d of %d is %d, head %d", ErrNumbering, i+1, len(evs), ev.Seq, head)
		}
	}
	return nil
}

// Batch gathers the events of one change, in the order they happened, at
// the change's time, for its writer to number after the stream's last
// (Numbered). A detail that does not marshal is kept as the batch's error.
type Batch struct {
	At     time.Time
	events []Event
	err    error
}

// Add appends an event of detail.
func (b *Batch) Add(detailType string, detail any) {
	ev, err := New(detailType, b.At, detail)
	if err != nil && b.err == nil {
		b.err = err
	}
	b.events = append(b.events, ev)
}

// Numbered returns the batch's events numbered after head (Number) and
// the stream's new last number, or the first error of Add.
func (b *Batch) Numbered(head int64) ([]Event, int64, error) {
	if b.err != nil {
		return nil, head, b.err
	}
	return b.events, Number(head, b.events), nil
}
