package memtable

import (
	"context"
	"sync"
)

// Event is one published event: its detail type and its detail as the
// service passed it (a value of the service's event type, for example
// tasks.TaskStatusChanged).
type Event struct {
	DetailType string
	Detail     any
}

// Publisher records published events in memory: it implements the
// Publisher port of every domain package (Publish(ctx, detailType,
// detail)). The zero value is ready to use and it is safe for concurrent
// use. Nothing is delivered anywhere: a test that needs a consumer's effect
// (an inbox fan-out, say) reads the events and calls the consumer's service
// itself.
type Publisher struct {
	// Err, when set, is returned by every Publish (and the event is not
	// recorded), to test what a service does when the bus fails.
	Err error

	mu     sync.Mutex
	events []Event
}

// Publish implements the domain's Publisher ports.
func (p *Publisher) Publish(_ context.Context, detailType string, detail any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Err != nil {
		return p.Err
	}
	p.events = append(p.events, Event{DetailType: detailType, Detail: detail})
	return nil
}

// Events returns every recorded event, oldest first.
func (p *Publisher) Events() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.events...)
}

// OfType returns the recorded events of one detail type, oldest first.
func (p *Publisher) OfType(detailType string) []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Event
	for _, e := range p.events {
		if e.DetailType == detailType {
			out = append(out, e)
		}
	}
	return out
}

// Reset forgets the recorded events.
func (p *Publisher) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = nil
}

// Details returns the details of the recorded events of one detail type
// that are of type T, oldest first: Details[tasks.TaskStatusChanged](pub,
// "TaskStatusChanged").
func Details[T any](p *Publisher, detailType string) []T {
	var out []T
	for _, e := range p.OfType(detailType) {
		if d, ok := e.Detail.(T); ok {
			out = append(out, d)
		}
	}
	return out
}
