package memstore

import (
	"context"
	"strconv"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/messaging"
)

// inboxRow is an INBOX item: the message's document (unread) and the
// recipient's read time.
type inboxRow struct {
	doc    []byte
	readAt *time.Time
}

func (r inboxRow) message() messaging.Message {
	m := readDoc[messaging.Message](r.doc)
	m.ReadAt = cloneTime(r.readAt)
	return m
}

// PutAgentMessage implements messaging.Store. Returns ECONFLICT when the
// id is taken.
func (s *Store) PutAgentMessage(_ context.Context, m messaging.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{m.TeamID, m.ID}
	if _, ok := s.agentMessages[k]; ok {
		return apperr.New(apperr.ECONFLICT, "message %s exists", m.ID)
	}
	if m.IdempotencyKey != "" {
		if s.messageRefs == nil {
			s.messageRefs = map[key]string{}
		}
		ref := key{m.TeamID, m.IdempotencyKey}
		if id, ok := s.messageRefs[ref]; ok {
			return messaging.Replayed{ID: id}
		}
		s.messageRefs[ref] = m.ID
	}
	s.agentMessages[k] = doc(m)
	return nil
}

// GetAgentMessage implements messaging.Store. Returns ENOTFOUND.
func (s *Store) GetAgentMessage(_ context.Context, teamID, id string) (messaging.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.agentMessages[key{teamID, id}]
	if !ok {
		return messaging.Message{}, apperr.NotFound("agent message", id)
	}
	m := readDoc[messaging.Message](b)
	m.TeamID = teamID
	return m, nil
}

// Deliver implements messaging.Store: the recipient's entry, unread,
// unless it exists (then nothing is written and it reports false).
func (s *Store) Deliver(_ context.Context, teamID, recipient string, m messaging.Message) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{teamID, recipient}
	if _, ok := s.inboxes[k][m.ID]; ok {
		return false, nil
	}
	if s.inboxes[k] == nil {
		s.inboxes[k] = map[string]inboxRow{}
	}
	m.ReadAt = nil
	s.inboxes[k][m.ID] = inboxRow{doc: doc(m)}
	return true, nil
}

// ListInbox implements messaging.Store, newest first. As in the adapter
// "unread only" filters after the limit, so a page may hold fewer entries
// than Limit while a next token is returned.
func (s *Store) ListInbox(_ context.Context, teamID, agent string, unreadOnly bool, p paging.Page) ([]messaging.Message, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rows []row[messaging.Message]
	for id, r := range s.inboxes[key{teamID, agent}] {
		rows = append(rows, row[messaging.Message]{sk: id, v: r.message()})
	}
	var keep func(messaging.Message) bool
	if unreadOnly {
		keep = func(m messaging.Message) bool { return m.ReadAt == nil }
	}
	scope := "inbox:" + teamID + ":" + agent + ":" + strconv.FormatBool(unreadOnly)
	return query(rows, true, scope, p, keep)
}

// MarkRead implements messaging.Store: each entry that exists and is
// unread gets read_at (the first read is kept); it returns how many
// changed. Unknown ids are skipped.
func (s *Store) MarkRead(_ context.Context, teamID, agent string, msgIDs []string, at time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inbox := s.inboxes[key{teamID, agent}]
	n := 0
	for _, id := range msgIDs {
		r, ok := inbox[id]
		if !ok || r.readAt != nil {
			continue
		}
		// The adapter stores read_at as RFC 3339 text in UTC.
		t := at.UTC()
		r.readAt = &t
		inbox[id] = r
		n++
	}
	return n, nil
}

// PutMemory implements memory.Store. A memory id already taken fails the
// adapter's condition, which it reports as an internal error (EINTERNAL),
// not a conflict; so does this store.
func (s *Store) PutMemory(_ context.Context, m memory.Memory) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{m.TeamID, m.ID}
	if _, ok := s.memories[k]; ok {
		return internal("PutMemory: memory " + m.ID + " exists")
	}
	s.memories[k] = doc(m)
	return nil
}

// RecentMemories implements memory.Store: up to limit memories, newest
// first.
func (s *Store) RecentMemories(ctx context.Context, teamID string, limit int) ([]memory.Memory, error) {
	return paging.Collect(limit, min(limit, paging.MaxLimit), func(p paging.Page) ([]memory.Memory, string, error) {
		return s.ListMemories(ctx, teamID, p)
	})
}

// ListMemories implements memory.Store, newest first. The memories carry
// no TeamID (it is not in the document), as from the adapter.
func (s *Store) ListMemories(_ context.Context, teamID string, p paging.Page) ([]memory.Memory, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rows []row[memory.Memory]
	for k, b := range s.memories {
		if k.team == teamID {
			rows = append(rows, row[memory.Memory]{sk: k.id, v: readDoc[memory.Memory](b)})
		}
	}
	return query(rows, true, "memories:"+teamID, p, nil)
}

// contextTTL is the adapter's bound on a cached context.
const contextTTL = time.Hour

// GetContext implements memory.Store: the cached context, a miss when
// there is none or it is more than an hour old by the store's clock (Now).
func (s *Store) GetContext(_ context.Context, teamID, agent string) (memory.Context, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.contexts[key{teamID, agent}]
	if !ok {
		return memory.Context{}, false, nil
	}
	c := readDoc[memory.Context](b)
	if s.now().Sub(c.BuiltAt) > contextTTL {
		return memory.Context{}, false, nil
	}
	return c, true, nil
}

// MemoryEpoch implements memory.Store (0 before the first invalidation).
func (s *Store) MemoryEpoch(_ context.Context, teamID string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epochs[teamID], nil
}

// PutContext implements memory.Store: c is cached only if the team's epoch
// is still epoch; epoch 0 means "never invalidated", as in the adapter's
// condition attribute_not_exists(epoch).
func (s *Store) PutContext(_ context.Context, teamID string, c memory.Context, epoch int) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.epochs[teamID]
	if (epoch > 0 && (!ok || cur != epoch)) || (epoch <= 0 && ok) {
		return false, nil // memories changed while it was built: do not cache
	}
	c.Cached = false
	s.contexts[key{teamID, c.Agent}] = doc(c)
	return true, nil
}

// DropContexts implements memory.Store: the epoch bumped first (so
// contexts being built now are not cached), then the agents' cached
// contexts deleted.
func (s *Store) DropContexts(_ context.Context, teamID string, agentSlugs []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epochs[teamID]++
	for _, a := range agentSlugs {
		delete(s.contexts, key{teamID, a})
	}
	return nil
}
