package memtable

import (
	"sync"
	"time"
)

// Clock is a settable clock for the services' Now fields, shared by the
// unit tests that move time (a task's deadline and the sweeper's grace, a
// consultation's idle limit and loop window). Safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock is a Clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time (a service's Now).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
