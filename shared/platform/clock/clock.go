// Package clock is the services' one injected clock. A service has a
// Now field of type Func: production leaves it nil and reads the system
// clock; a test sets it (testkit/memstore.Clock moves time on purpose).
// It replaces the now() helper each service used to copy.
package clock

import "time"

// Func reads the time. A nil Func reads the system clock.
type Func func() time.Time

// UTC is the time f reads (the system clock's when f is nil), in UTC:
// every time the services store and compare is UTC.
func (f Func) UTC() time.Time {
	if f == nil {
		return time.Now().UTC()
	}
	return f().UTC()
}
