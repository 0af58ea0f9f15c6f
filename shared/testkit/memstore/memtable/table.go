// Package memtable is the core of the in-memory fakes of the store ports,
// as shared/store/dynamo is the core of the DynamoDB adapters: the one
// table every fake of a test shares (its items, its lock and its clock),
// what the DynamoDB core serves itself (the streams, the references from
// an Idempotency-Key to what a create stored, the request counter), the
// helpers the fakes build their reads and writes with (documents, paged
// queries, the sweepers' indexes), and the events the services publish
// (Publisher) on a clock the tests move (Clock).
//
// A fake is a view of a Table, as an adapter is a view of a DynamoDB
// table: fakes made on one Table see each other's items, and a write that
// spans stores (a turn's commit stores the conversation, its messages, the
// decision, a memory and the agents' counters) holds the Table's one lock
// across its checks and its changes, which is the fake's transaction:
// every condition is checked before any change is made, so a refused
// write changes nothing and concurrent writes cannot break a limit.
//
// It imports no domain package, so a fake's test links only the domains
// its fake serves.
package memtable

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
)

// Kinds of the items several fakes read or write, stored as JSON
// documents of their domain type (Docs), as the DynamoDB adapters share
// the key shapes of shared/store/dynamo: an item kind and the store that
// owns it.
const (
	// KindConversation: conversations.Conversation without its
	// participants (conversationfake; tasks check a conversation exists,
	// results move it on).
	KindConversation = "conversation"
	// KindDecision: cascade.Decision, written by a turn (conversationfake),
	// read by the routing log (decisionfake).
	KindDecision = "decision"
	// KindRating: routing.Rating by reply id "#" agent, written by a rating
	// (conversationfake), read by the expert gate (expertgatefake).
	KindRating = "rating"
	// KindMemory: memory.Memory (memoryfake), also written by turns,
	// handoffs, reports and consultations.
	KindMemory = "memory"
	// KindContext: memory.Context by agent (memoryfake), dropped by the
	// writes that add a memory (DropContexts).
	KindContext = "context"
	// KindEscalation: consultations.Escalation (consultationfake), also
	// written by a task's overdue escalation (taskfake).
	KindEscalation = "escalation"
	// KindAgentMessage: messaging.Message (messagefake), also written by an
	// escalation's answer (consultationfake).
	KindAgentMessage = "agent_message"
	// KindInbox: messaging.Message by recipient "#" message id, its ReadAt
	// the recipient's read (messagefake, and an escalation's answer).
	KindInbox = "inbox"
	// KindResultMarker: the id of the message a result was posted as, by
	// the result's marker (resultfake, and a turn carrying a result).
	KindResultMarker = "result_marker"
)

// Key names an item of a team: its team and its id (or slug, or key).
type Key struct{ Team, ID string }

// Table holds every item of every team in memory. The zero value is not
// usable; call New. Lock it around every read and write.
type Table struct {
	// Now is the clock of the fakes' own time checks (a cached memory
	// context expires an hour after it was built); tests with a fake
	// clock set it to the services' clock. Set it before use.
	Now func() time.Time

	mu      sync.Mutex
	parts   map[string]any
	docs    map[string]map[Key][]byte
	refs    map[Key][]string // by team and kind "#" Idempotency-Key
	epochs  map[string]int   // memory epochs by team, absent until the first invalidation
	streams map[Key]*streamRow
	rates   map[string]int // requests by team "#" second
}

// New returns an empty table on the wall clock.
func New() *Table { return &Table{Now: time.Now} }

// Lock takes the table's lock: a fake holds it across a read, or across
// all of a write's checks and changes.
func (tb *Table) Lock() { tb.mu.Lock() }

// Unlock releases the table's lock.
func (tb *Table) Unlock() { tb.mu.Unlock() }

// Time is the table's time (Now, or the wall clock when Now is nil).
func Time(tb *Table) time.Time {
	if tb.Now != nil {
		return tb.Now()
	}
	return time.Now()
}

// Part returns the part of the table named name, made by mk on first use:
// the items a fake keeps to itself, found by every fake on the table.
// Call with the table locked.
func Part[T any](tb *Table, name string, mk func() *T) *T {
	if tb.parts == nil {
		tb.parts = map[string]any{}
	}
	p, ok := tb.parts[name].(*T)
	if !ok {
		p = mk()
		tb.parts[name] = p
	}
	return p
}

// Docs returns the table's documents of kind, by team and id, made on
// first use. Call with the table locked.
func Docs(tb *Table, kind string) map[Key][]byte {
	if tb.docs == nil {
		tb.docs = map[string]map[Key][]byte{}
	}
	d := tb.docs[kind]
	if d == nil {
		d = map[Key][]byte{}
		tb.docs[kind] = d
	}
	return d
}

// Doc encodes a value as an adapter's document does: fields tagged
// json:"-" (TeamID, most of them) are not stored.
func Doc(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("memtable: marshal: " + err.Error())
	}
	return b
}

// ReadDoc decodes a document.
func ReadDoc[T any](b []byte) T {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		panic("memtable: unmarshal: " + err.Error())
	}
	return v
}

// Internal is the error an adapter returns for an infrastructure failure.
func Internal(msg string) error { return apperr.New(apperr.EINTERNAL, "memstore: %s", msg) }

// Conflict is an adapter's answer to a transaction canceled by an item
// other than the one the caller is told about (an id taken, a counter
// moved): ECONFLICT, reason TransactionConflict, to try again.
func Conflict(what string) error {
	return apperr.New(apperr.ECONFLICT, "the %s conflicted with a concurrent change; try again", what).WithReason("TransactionConflict")
}

// CloneTime copies a time pointer.
func CloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// Epoch is the team's memory epoch and whether it was ever moved (the
// adapter's epoch item exists). Call with the table locked.
func Epoch(tb *Table, teamID string) (int, bool) {
	e, ok := tb.epochs[teamID]
	return e, ok
}

// DropContexts is what every write that adds a memory does in its
// transaction, as memorystore.DropContexts: the team's epoch moves on (a
// context being built now is not cached) and the agents' cached contexts
// are deleted. Call with the table locked.
func DropContexts(tb *Table, teamID string, agents []string) {
	if tb.epochs == nil {
		tb.epochs = map[string]int{}
	}
	tb.epochs[teamID]++
	ctxs := Docs(tb, KindContext)
	for _, a := range agents {
		delete(ctxs, Key{teamID, a})
	}
}
