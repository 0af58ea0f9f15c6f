package streams

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// KeepAlive is how often an idle stream writes a comment line: below the
// idle timeouts between the client and the function (API Gateway's 5
// minutes on a regional endpoint, and the 30 to 60 s of common proxies).
const KeepAlive = 15 * time.Second

// SSE writes Server-Sent Events (the WHATWG event stream format): an
// optional id line, the event's name, its data as one line of JSON, and a
// blank line. It is safe for concurrent use: a turn's agents write at once.
type SSE struct {
	mu sync.Mutex
	w  io.Writer
	// sent counts the events written.
	sent int
}

// NewSSE writes events to w.
func NewSSE(w io.Writer) *SSE { return &SSE{w: w} }

// Send writes one event; id "" writes none (the event is not resumable).
// data is marshalled, or written as it is when it is a json.RawMessage.
func (s *SSE) Send(id, event string, data any) error {
	raw, ok := data.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(data); err != nil {
			return err
		}
	}
	var b strings.Builder
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	b.WriteString("event: " + event + "\n")
	// JSON has no raw newline, but a detail stored as indented JSON
	// would: each line is a data line, as the format asks.
	for _, line := range strings.Split(string(raw), "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	return s.write(b.String(), true)
}

// SendEvent writes a stream's event: its sequence number is the id, its
// detail type the name, its detail the data.
func (s *SSE) SendEvent(e Event) error {
	return s.Send(strconv.FormatInt(e.Seq, 10), e.Type, e.Detail)
}

// Comment writes a comment line (a keep-alive): clients ignore it.
func (s *SSE) Comment(text string) error { return s.write(": "+text+"\n\n", false) }

// Sent is the number of events written.
func (s *SSE) Sent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

func (s *SSE) write(text string, event bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if event {
		s.sent++
	}
	_, err := io.WriteString(s.w, text)
	return err
}

// ParseLastEventID reads a Last-Event-ID header: a sequence number of the
// stream (0 and up); ok is false for anything else.
func ParseLastEventID(v string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n, err == nil && n >= 0
}
