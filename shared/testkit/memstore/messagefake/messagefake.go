// Package messagefake is the in-memory fake of messaging.Store (messages
// between agents and the agents' inboxes), as shared/store/messagestore
// is the DynamoDB one; both are held to the store contract
// (shared/testkit/storetest).
package messagefake

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
)

var _ messaging.Store = (*Messages)(nil)

// Messages is messaging.Store on a memtable.Table: the messages
// (memtable.KindAgentMessage) and the inbox entries (memtable.KindInbox),
// which an escalation's answer writes too. Safe for concurrent use.
type Messages struct{ tb *memtable.Table }

// New returns the messages of tb (nil: a table of their own).
func New(tb *memtable.Table) *Messages {
	if tb == nil {
		tb = memtable.New()
	}
	return &Messages{tb: tb}
}

// InboxKey is the key of agent's entry of a message in the team's
// inboxes (memtable.KindInbox).
func InboxKey(teamID, agent, msgID string) memtable.Key {
	return memtable.Key{Team: teamID, ID: agent + "#" + msgID}
}

// PutAgentMessage implements messaging.Store: ECONFLICT when the id is
// taken; a message under an Idempotency-Key already used is Replayed,
// naming the first (the reference is written with the message, as the
// adapter's transaction).
func (s *Messages) PutAgentMessage(_ context.Context, m messaging.Message) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	if m.IdempotencyKey != "" {
		if ids, ok := memtable.Ref(s.tb, m.TeamID, messaging.RefKind, m.IdempotencyKey); ok {
			return messaging.Replayed{ID: ids[0]}
		}
	}
	docs := memtable.Docs(s.tb, memtable.KindAgentMessage)
	k := memtable.Key{Team: m.TeamID, ID: m.ID}
	if _, ok := docs[k]; ok {
		return apperr.New(apperr.ECONFLICT, "message %s exists", m.ID)
	}
	if m.IdempotencyKey != "" {
		memtable.SetRef(s.tb, m.TeamID, messaging.RefKind, m.IdempotencyKey, m.ID)
	}
	docs[k] = memtable.Doc(m)
	return nil
}

// GetAgentMessage implements messaging.Store. Returns ENOTFOUND.
func (s *Messages) GetAgentMessage(_ context.Context, teamID, id string) (messaging.Message, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	b, ok := memtable.Docs(s.tb, memtable.KindAgentMessage)[memtable.Key{Team: teamID, ID: id}]
	if !ok {
		return messaging.Message{}, apperr.NotFound("agent message", id)
	}
	m := memtable.ReadDoc[messaging.Message](b)
	m.TeamID = teamID
	return m, nil
}

// Deliver implements messaging.Store: the recipient's entry, unread,
// unless it exists (then nothing is written and it reports false).
func (s *Messages) Deliver(_ context.Context, teamID, recipient string, m messaging.Message) (bool, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	inbox := memtable.Docs(s.tb, memtable.KindInbox)
	k := InboxKey(teamID, recipient, m.ID)
	if _, ok := inbox[k]; ok {
		return false, nil
	}
	m.ReadAt = nil
	inbox[k] = memtable.Doc(m)
	return true, nil
}

// ListInbox implements messaging.Store, newest first. As in the adapter
// "unread only" filters after the limit, so a page may hold fewer entries
// than Limit while a next token is returned.
func (s *Messages) ListInbox(_ context.Context, teamID, agent string, unreadOnly bool, p paging.Page) ([]messaging.Message, string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var rows []memtable.Row[messaging.Message]
	for k, b := range memtable.Docs(s.tb, memtable.KindInbox) {
		if id, ok := strings.CutPrefix(k.ID, agent+"#"); ok && k.Team == teamID {
			rows = append(rows, memtable.Row[messaging.Message]{SK: id, V: memtable.ReadDoc[messaging.Message](b)})
		}
	}
	var keep func(messaging.Message) bool
	if unreadOnly {
		keep = func(m messaging.Message) bool { return m.ReadAt == nil }
	}
	scope := "inbox:" + teamID + ":" + agent + ":" + strconv.FormatBool(unreadOnly)
	return memtable.Query(rows, true, scope, p, keep)
}

// MarkRead implements messaging.Store: each entry that exists and is
// unread gets read_at (the first read is kept); it returns how many
// changed. Unknown ids are skipped.
func (s *Messages) MarkRead(_ context.Context, teamID, agent string, msgIDs []string, at time.Time) (int, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	inbox := memtable.Docs(s.tb, memtable.KindInbox)
	n := 0
	for _, id := range msgIDs {
		k := InboxKey(teamID, agent, id)
		b, ok := inbox[k]
		if !ok {
			continue
		}
		m := memtable.ReadDoc[messaging.Message](b)
		if m.ReadAt != nil {
			continue
		}
		// The adapter stores read_at as RFC 3339 text in UTC.
		t := at.UTC()
		m.ReadAt = &t
		inbox[k] = memtable.Doc(m)
		n++
	}
	return n, nil
}
