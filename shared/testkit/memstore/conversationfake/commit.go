package conversationfake

import (
	"context"
	"slices"
	"time"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/agentfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/decisionfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
)

// CommitTurn implements conversations.Store: the conversation
// (conditioned on the version read and still open: ECONFLICT, reason
// ConversationChanged), the messages, the participants, the handoff of a
// return, the agents' conversation counters, the decision, the markers of
// the results the reply carries and the episodic memory of a return (its
// agents' cached contexts dropped), at once. A message, handoff, decision
// or memory id or a result marker already taken is ECONFLICT with reason
// TransactionConflict, as the adapter reports any other cancellation; a
// turn under an Idempotency-Key already used is Replayed.
func (s *Conversations) CommitTurn(_ context.Context, teamID string, t conversations.Turn) error {
	c := t.Conversation
	evs, err := MessageEvents(teamID, c, t.Messages)
	if err != nil {
		return err
	}
	s.tb.Lock()
	defer s.tb.Unlock()
	if ids, ok := memtable.Ref(s.tb, teamID, conversations.RefKind, t.IdempotencyKey); ok && t.IdempotencyKey != "" {
		return conversations.Replayed{MessageIDs: ids}
	}
	if err := s.turnFree(teamID, t, evs); err != nil {
		return err
	}
	memtable.Docs(s.tb, memtable.KindConversation)[memtable.Key{Team: teamID, ID: c.ID}] = convDoc(c)
	if t.IdempotencyKey != "" {
		ids := make([]string, len(t.Messages))
		for i, m := range t.Messages {
			ids[i] = m.ID
		}
		memtable.SetRef(s.tb, teamID, conversations.RefKind, t.IdempotencyKey, ids...)
	}
	for _, m := range t.Messages {
		PutMessage(s.tb, teamID, m)
	}
	memtable.StreamAppend(s.tb, teamID, streams.Conversation(c.ID), evs)
	for _, p := range t.Join {
		join(s.tb, teamID, c.ID, p)
	}
	if t.Handoff != nil {
		putHandoff(s.tb, teamID, *t.Handoff)
	}
	moveCurrent(s.tb, teamID, t.PrevCurrent, c.CurrentAgent)
	for slug, ms := range t.Latency {
		agentfake.LoadOf(s.tb, teamID, slug).LatencyMS = ms
	}
	memtable.Docs(s.tb, memtable.KindDecision)[memtable.Key{Team: teamID, ID: t.Decision.ID}] = memtable.Doc(t.Decision)
	markers := memtable.Docs(s.tb, memtable.KindResultMarker)
	for _, r := range t.Carried {
		markers[memtable.Key{Team: teamID, ID: r.Marker}] = []byte(r.MessageID)
	}
	putMemory(s.tb, teamID, t.Memory)
	return nil
}

// turnFree is the conditions of a turn's transaction, in its order. Call
// with the table locked.
func (s *Conversations) turnFree(teamID string, t conversations.Turn, evs []streams.Event) error {
	c := t.Conversation
	if !convCheck(s.tb, teamID, c.ID, c.Version-1) {
		return changedErr("turn")
	}
	for _, m := range t.Messages {
		if !MessageFree(s.tb, teamID, m.ConversationID, m.ID) {
			return memtable.Conflict("turn")
		}
	}
	if err := memtable.StreamFree(s.tb, teamID, streams.Conversation(c.ID), evs); err != nil {
		return err
	}
	if t.Handoff != nil && !handoffFree(s.tb, teamID, *t.Handoff) {
		return memtable.Conflict("turn")
	}
	if _, taken := memtable.Docs(s.tb, memtable.KindDecision)[memtable.Key{Team: teamID, ID: t.Decision.ID}]; taken {
		return memtable.Conflict("turn")
	}
	for _, r := range t.Carried {
		if _, posted := memtable.Docs(s.tb, memtable.KindResultMarker)[memtable.Key{Team: teamID, ID: r.Marker}]; posted {
			return memtable.Conflict("turn")
		}
	}
	if !memoryFree(s.tb, teamID, t.Memory) {
		return memtable.Conflict("turn")
	}
	return nil
}

// memoryFree is the condition on the memory a turn or handoff creates
// (nil: none). Call with the table locked.
func memoryFree(tb *memtable.Table, teamID string, m *memory.Memory) bool {
	if m == nil {
		return true
	}
	_, taken := memtable.Docs(tb, memtable.KindMemory)[memtable.Key{Team: teamID, ID: m.ID}]
	return !taken
}

// putMemory stores the memory a turn or handoff creates (nil: none) and,
// in the same transaction as the adapter, drops the cached contexts of
// the agents who may see it. Call with the table locked.
func putMemory(tb *memtable.Table, teamID string, m *memory.Memory) {
	if m == nil {
		return
	}
	memtable.Docs(tb, memtable.KindMemory)[memtable.Key{Team: teamID, ID: m.ID}] = memtable.Doc(*m)
	memtable.DropContexts(tb, teamID, append([]string{m.Author}, m.Agents...))
}

// moveCurrent moves the open-conversation count from the conversation's
// previous current agent to its new one. Call with the table locked.
func moveCurrent(tb *memtable.Table, teamID, prev, cur string) {
	if prev == cur {
		return
	}
	if prev != "" {
		convCounter(tb, teamID, prev, -1)
	}
	if cur != "" {
		convCounter(tb, teamID, cur, 1)
	}
}

// CloseConversation implements conversations.Store: c (as read) closed,
// conditioned on the stored version being c's and open (ECONFLICT, reason
// ConversationChanged, wrapping conversations.ErrChanged as the adapter's
// does), and its current agent's counter released.
func (s *Conversations) CloseConversation(_ context.Context, teamID string, c conversations.Conversation, at time.Time) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	if !convCheck(s.tb, teamID, c.ID, c.Version) {
		return apperr.Wrap(apperr.ECONFLICT, conversations.ErrChanged, "the conversation changed; read it and try again").WithReason("ConversationChanged")
	}
	c.Status, c.UpdatedAt, c.Version = conversations.StatusClosed, at, c.Version+1
	memtable.Docs(s.tb, memtable.KindConversation)[memtable.Key{Team: teamID, ID: c.ID}] = convDoc(c)
	if c.CurrentAgent != "" {
		convCounter(s.tb, teamID, c.CurrentAgent, -1)
	}
	return nil
}

// RateMessage implements conversations.Store: the rating on the reply
// (which must exist and be an agent's: ENOTFOUND otherwise) and one rating
// per contributing agent for the expert gate (memtable.KindRating), a
// later rating replacing an earlier one.
func (s *Conversations) RateMessage(_ context.Context, teamID string, f conversations.Feedback) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	r, ok := stateOf(s.tb).messages[memtable.Key{Team: teamID, ID: f.ConversationID}][f.MessageID]
	if !ok || r.role != conversations.AuthorAssistant {
		return apperr.NotFound("agent reply", f.MessageID)
	}
	rated := f.RatedAt.UTC()
	r.rating, r.ratedAt, r.comment = f.Rating, rated, f.Comment
	ratings := memtable.Docs(s.tb, memtable.KindRating)
	for _, a := range f.Agents {
		ratings[memtable.Key{Team: teamID, ID: f.MessageID + "#" + a}] = memtable.Doc(routing.Rating{Agent: a, Rating: f.Rating, Query: f.Query, At: rated, UserID: f.UserID})
	}
	return nil
}

// GetDecision implements conversations.Replays (the routing log's read).
// Returns ENOTFOUND.
func (s *Conversations) GetDecision(_ context.Context, teamID, id string) (cascade.Decision, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	return decisionfake.Get(s.tb, teamID, id)
}

// CommitHandoff implements conversations.Store: the conversation
// (ECONFLICT, reason ConversationChanged, when it moved on or closed), the
// handoff record, the note, the participants' roles, the agents'
// conversation counters and the shared handoff memory (its agents' cached
// contexts dropped), at once; an id already taken is ECONFLICT with reason
// TransactionConflict.
func (s *Conversations) CommitHandoff(_ context.Context, teamID string, h conversations.HandoffChange) error {
	c := h.Conversation
	evs, err := MessageEvents(teamID, c, []conversations.Message{h.Note})
	if err != nil {
		return err
	}
	s.tb.Lock()
	defer s.tb.Unlock()
	if !convCheck(s.tb, teamID, c.ID, c.Version-1) {
		return changedErr("handoff")
	}
	if !handoffFree(s.tb, teamID, h.Handoff) || !MessageFree(s.tb, teamID, h.Note.ConversationID, h.Note.ID) {
		return memtable.Conflict("handoff")
	}
	if err := memtable.StreamFree(s.tb, teamID, streams.Conversation(c.ID), evs); err != nil {
		return err
	}
	if !memoryFree(s.tb, teamID, h.Memory) {
		return memtable.Conflict("handoff")
	}
	memtable.Docs(s.tb, memtable.KindConversation)[memtable.Key{Team: teamID, ID: c.ID}] = convDoc(c)
	putHandoff(s.tb, teamID, h.Handoff)
	PutMessage(s.tb, teamID, h.Note)
	memtable.StreamAppend(s.tb, teamID, streams.Conversation(c.ID), evs)
	for _, p := range h.Roles {
		join(s.tb, teamID, c.ID, p)
	}
	moveCurrent(s.tb, teamID, h.PrevCurrent, c.CurrentAgent)
	putMemory(s.tb, teamID, h.Memory)
	return nil
}

// ListHandoffs implements conversations.Store, oldest first.
func (s *Conversations) ListHandoffs(_ context.Context, teamID, convID string) ([]conversations.Handoff, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var rows []memtable.Row[conversations.Handoff]
	for id, b := range stateOf(s.tb).handoffs[memtable.Key{Team: teamID, ID: convID}] {
		rows = append(rows, memtable.Row[conversations.Handoff]{SK: id, V: memtable.ReadDoc[conversations.Handoff](b)})
	}
	list, _, err := memtable.Query(rows, false, "handoffs", memtable.PageAll, nil)
	return list, err
}

// SetParticipants implements conversations.Store: the conversation must be
// open (ECONFLICT, reason ConversationClosed; the adapter's condition on a
// missing conversation fails the same way, so an unknown conversation is
// reported as closed too), and each agent removed an active participant
// (ENOTFOUND naming the first that is not). Added agents join as in a
// turn: one that left comes back with its first role and join time.
func (s *Conversations) SetParticipants(_ context.Context, teamID, convID string, add []conversations.Participant, remove []string, at time.Time) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	b, ok := memtable.Docs(s.tb, memtable.KindConversation)[memtable.Key{Team: teamID, ID: convID}]
	if !ok || memtable.ReadDoc[conversations.Conversation](b).Status != conversations.StatusOpen {
		return apperr.New(apperr.ECONFLICT, "conversation is closed").WithReason("ConversationClosed")
	}
	parts := stateOf(s.tb).parts[memtable.Key{Team: teamID, ID: convID}]
	for _, slug := range remove {
		p, ok := parts[slug]
		if !ok || p.LeftAt != nil {
			return apperr.NotFound("participant", slug)
		}
	}
	for _, p := range add {
		join(s.tb, teamID, convID, p)
	}
	left := at.UTC()
	parts = stateOf(s.tb).parts[memtable.Key{Team: teamID, ID: convID}]
	for _, slug := range remove {
		p := parts[slug]
		p.LeftAt = &left
		parts[slug] = p
	}
	return nil
}

// TurnOf implements conversations.Replays: the messages of the turn
// stored under the Idempotency-Key k (none: empty).
func (s *Conversations) TurnOf(_ context.Context, teamID, k string) ([]string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	ids, _ := memtable.Ref(s.tb, teamID, conversations.RefKind, k)
	return slices.Clone(ids), nil
}
