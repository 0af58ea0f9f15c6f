package streamsapi

import (
	"io"
	"sync"
)

// pump is a writer that never waits: what is written is queued and copied
// to the underlying writer by a goroutine of its own. A streamed turn
// writes through it, so a slow reader, or one that went away, never holds
// up the agents (the turn is committed whatever the client does); once a
// write to the reader fails the rest is dropped. A turn's events are
// bounded by its replies, so the queue is too.
type pump struct {
	mu     sync.Mutex
	queue  [][]byte
	closed bool
	wake   chan struct{}
	done   chan struct{}
}

func newPump(w io.Writer) *pump {
	p := &pump{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go p.run(w)
	return p
}

func (p *pump) Write(b []byte) (int, error) {
	p.mu.Lock()
	p.queue = append(p.queue, append([]byte(nil), b...))
	p.mu.Unlock()
	p.signal()
	return len(b), nil
}

func (p *pump) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *pump) run(w io.Writer) {
	defer close(p.done)
	failed := false
	for {
		p.mu.Lock()
		batch, closed := p.queue, p.closed
		p.queue = nil
		p.mu.Unlock()
		for _, b := range batch {
			if !failed {
				_, err := w.Write(b)
				failed = err != nil
			}
		}
		if closed && len(batch) == 0 {
			return
		}
		if len(batch) == 0 {
			<-p.wake
		}
	}
}

// Close waits until everything written has been copied (or dropped).
func (p *pump) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.signal()
	<-p.done
}
