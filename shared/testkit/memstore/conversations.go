package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
)

// Conversations, messages, decisions and handoffs are stored as the
// adapter stores them: a JSON document of the domain value (so fields
// tagged json:"-", such as TeamID, do not come back from listings) plus
// the attributes conditions need.

// storedMessage is the adapter's message document: the message and the
// query it answered (json:"-" on the domain type).
type storedMessage struct {
	conversations.Message
	Query string `json:"query,omitempty"`
}

// messageRow is a MSG item: its document, its role and its rating.
type messageRow struct {
	doc     []byte
	role    string
	rating  int
	ratedAt string
	comment string
}

func (r *messageRow) message() conversations.Message {
	st := readDoc[storedMessage](r.doc)
	m := st.Message
	m.Query = st.Query
	if r.rating != 0 {
		m.Rating = r.rating
	}
	return m
}

// ratingRow is an FB item (a rating per contributing agent).
type ratingRow struct {
	agent   string
	rating  int
	query   string
	ratedAt string // RFC 3339 with nanoseconds, compared as a string (see RecentRatings)
}

// convDoc is the conversation's document: without its participants.
func convDoc(c conversations.Conversation) []byte {
	c.Participants = nil
	return doc(c)
}

// convCheck is the condition on the conversation item of a turn, handoff
// or close: it exists at version (the one read) and is open. Call with the
// lock held.
func (s *Store) convCheck(teamID, id string, version int) bool {
	b, ok := s.convs[key{teamID, id}]
	if !ok {
		return false
	}
	c := readDoc[conversations.Conversation](b)
	return c.Version == version && c.Status == conversations.StatusOpen
}

// join is the adapter's participant upsert: a returning agent keeps its
// first role (unless the change sets it) and join time, and is no longer
// marked as having left. Call with the lock held.
func (s *Store) join(teamID, convID string, p conversations.Participant) {
	k := key{teamID, convID}
	if s.parts[k] == nil {
		s.parts[k] = map[string]conversations.Participant{}
	}
	cur, ok := s.parts[k][p.Agent]
	if !ok {
		cur = conversations.Participant{Agent: p.Agent, Role: p.Role, JoinedAt: p.JoinedAt.UTC()}
	}
	if p.SetRole {
		cur.Role = p.Role
	}
	cur.LeftAt = nil
	s.parts[k][p.Agent] = cur
}

// convCounter moves an agent's active-conversation counter. Call with the
// lock held.
func (s *Store) convCounter(teamID, slug string, delta int) {
	s.loadOf(teamID, slug).activeConversations += delta
}

// messageFree reports whether a message id is unused in a conversation.
func (s *Store) messageFree(teamID, convID, msgID string) bool {
	_, taken := s.messages[key{teamID, convID}][msgID]
	return !taken
}

func (s *Store) putMessage(teamID string, m conversations.Message) {
	k := key{teamID, m.ConversationID}
	if s.messages[k] == nil {
		s.messages[k] = map[string]*messageRow{}
	}
	s.messages[k][m.ID] = &messageRow{doc: doc(storedMessage{m, m.Query}), role: m.Role}
}

func (s *Store) handoffFree(teamID string, h conversations.Handoff) bool {
	_, taken := s.handoffs[key{teamID, h.ConversationID}][h.ID]
	return !taken
}

func (s *Store) putHandoff(teamID string, h conversations.Handoff) {
	k := key{teamID, h.ConversationID}
	if s.handoffs[k] == nil {
		s.handoffs[k] = map[string][]byte{}
	}
	s.handoffs[k][h.ID] = doc(h)
}

// changedErr and conflictErr are the adapter's two cancellations: the
// conversation's own condition failed, or another item's did.
// changedErr is conversations.ErrChanged inside the client-facing
// ECONFLICT, as the DynamoDB adapter returns it.
func changedErr(what string) error {
	return apperr.Wrap(apperr.ECONFLICT, conversations.ErrChanged, "the conversation changed during the %s", what).WithReason("ConversationChanged")
}

func conflictErr(what string) error {
	return apperr.New(apperr.ECONFLICT, "the %s conflicted with a concurrent change; try again", what).WithReason("TransactionConflict")
}

// CreateConversation implements conversations.Store: the conversation
// (ECONFLICT if it exists), its primary participant and the primary's
// conversation counter. Neither the team nor the agent is checked, as in
// the adapter (the service checks the agent).
func (s *Store) CreateConversation(_ context.Context, c conversations.Conversation, primary *conversations.Participant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{c.TeamID, c.ID}
	if _, ok := s.convs[k]; ok {
		return apperr.New(apperr.ECONFLICT, "conversation already exists")
	}
	s.convs[k] = convDoc(c)
	if primary != nil {
		s.join(c.TeamID, c.ID, *primary)
		s.convCounter(c.TeamID, primary.Agent, 1)
	}
	return nil
}

// GetConversation implements conversations.Store, without participants.
// Returns ENOTFOUND.
func (s *Store) GetConversation(_ context.Context, teamID, id string) (conversations.Conversation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.convs[key{teamID, id}]
	if !ok {
		return conversations.Conversation{}, apperr.NotFound("conversation", id)
	}
	c := readDoc[conversations.Conversation](b)
	c.TeamID = teamID
	c.EventSeq = s.streamHead(teamID, streams.Conversation(id)) // the adapter's event_seq
	return c, nil
}

// messageEvents are the stream events of msgs stored with c (its new
// state), numbered as the adapter numbers them and checked as it checks
// them before it sends the change.
func messageEvents(teamID string, c conversations.Conversation, msgs []conversations.Message) ([]streams.Event, error) {
	evs, err := conversations.MessageEvents(teamID, c.EventSeq, msgs)
	if err != nil {
		return nil, internal(err.Error())
	}
	return evs, streamNumbered(c.EventSeq, evs)
}

// ListConversations implements conversations.Store, newest first. As in
// the adapter the listed conversations carry no TeamID (it is not in the
// document).
func (s *Store) ListConversations(_ context.Context, teamID string, p paging.Page) ([]conversations.Conversation, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rows []row[conversations.Conversation]
	for k, b := range s.convs {
		if k.team == teamID {
			c := readDoc[conversations.Conversation](b)
			c.EventSeq = s.streamHead(teamID, streams.Conversation(k.id))
			rows = append(rows, row[conversations.Conversation]{sk: k.id, v: c})
		}
	}
	return query(rows, true, "convs:"+teamID, p, nil)
}

// ListParticipants implements conversations.Store: every agent that
// joined, by slug, including those that left (LeftAt set). Like the
// adapter it reads one page of 100.
func (s *Store) ListParticipants(_ context.Context, teamID, id string) ([]conversations.Participant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rows []row[conversations.Participant]
	for slug, p := range s.parts[key{teamID, id}] {
		p.LeftAt = cloneTime(p.LeftAt)
		rows = append(rows, row[conversations.Participant]{sk: slug, v: p})
	}
	list, _, err := query(rows, false, "parts", paging.Page{Limit: 100}, nil)
	return list, err
}

func (s *Store) messageRows(teamID, convID string) []row[conversations.Message] {
	var rows []row[conversations.Message]
	for id, r := range s.messages[key{teamID, convID}] {
		rows = append(rows, row[conversations.Message]{sk: id, v: r.message()})
	}
	return rows
}

// ListMessages implements conversations.Store, oldest first.
func (s *Store) ListMessages(_ context.Context, teamID, id string, p paging.Page) ([]conversations.Message, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return query(s.messageRows(teamID, id), false, "msgs:"+teamID+":"+id, p, nil)
}

// ListMessagesAfter implements conversations.MessageTail: the messages
// whose ids sort after after, oldest first, paged as the adapter's query
// (the token bound to the conversation and after).
func (s *Store) ListMessagesAfter(_ context.Context, teamID, id, after string, p paging.Page) ([]conversations.Message, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rows []row[conversations.Message]
	for _, r := range s.messageRows(teamID, id) {
		if r.sk > after {
			rows = append(rows, r)
		}
	}
	return query(rows, false, "msgs-after:"+teamID+":"+id+":"+after, p, nil)
}

// RecentMessages implements conversations.Store: the last n messages,
// oldest first (nil when there are none; n <= 0 reads all, as the
// adapter's query without a limit).
func (s *Store) RecentMessages(_ context.Context, teamID, id string, n int) ([]conversations.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list, _, err := query(s.messageRows(teamID, id), true, "recent", paging.Page{Limit: n}, nil)
	if len(list) == 0 {
		return nil, err
	}
	slices.Reverse(list)
	return list, err
}

// GetMessage implements conversations.Store. Returns ENOTFOUND.
func (s *Store) GetMessage(_ context.Context, teamID, convID, msgID string) (conversations.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.messages[key{teamID, convID}][msgID]
	if !ok {
		return conversations.Message{}, apperr.NotFound("message", msgID)
	}
	return r.message(), nil
}

// CommitTurn implements conversations.Store: the conversation
// (conditioned on the version read and still open: ECONFLICT, reason
// ConversationChanged), the messages, the participants, the handoff of a
// return, the agents' conversation counters, the decision and the markers
// of the results the reply carries, at once. A message, handoff or
// decision id or a result marker already taken is ECONFLICT with reason
// TransactionConflict, as the adapter reports any other cancellation. The
// episodic memory of a return is written with the turn and, as in the
// adapter, the two agents' cached contexts are dropped after it.
func (s *Store) CommitTurn(ctx context.Context, teamID string, t conversations.Turn) error {
	if err := s.commitTurn(teamID, t); err != nil || t.Memory == nil {
		return err
	}
	return s.DropContexts(ctx, teamID, append([]string{t.Memory.Author}, t.Memory.Agents...))
}

func (s *Store) commitTurn(teamID string, t conversations.Turn) error {
	c := t.Conversation
	evs, err := messageEvents(teamID, c, t.Messages)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ref := key{teamID, t.IdempotencyKey}
	if ids, ok := s.turnRefs[ref]; ok && t.IdempotencyKey != "" {
		return conversations.Replayed{MessageIDs: slices.Clone(ids)}
	}
	if !s.convCheck(teamID, c.ID, c.Version-1) {
		return changedErr("turn")
	}
	for _, m := range t.Messages {
		if !s.messageFree(teamID, m.ConversationID, m.ID) {
			return conflictErr("turn")
		}
	}
	if err := s.streamFree(teamID, streams.Conversation(c.ID), evs); err != nil {
		return err
	}
	if t.Handoff != nil && !s.handoffFree(teamID, *t.Handoff) {
		return conflictErr("turn")
	}
	if _, taken := s.decisions[key{teamID, t.Decision.ID}]; taken {
		return conflictErr("turn")
	}
	for _, r := range t.Carried {
		if _, posted := s.resultMarkers[key{teamID, r.Marker}]; posted {
			return conflictErr("turn")
		}
	}
	if t.Memory != nil {
		if _, taken := s.memories[key{teamID, t.Memory.ID}]; taken {
			return conflictErr("turn")
		}
		s.memories[key{teamID, t.Memory.ID}] = doc(*t.Memory)
	}
	s.convs[key{teamID, c.ID}] = convDoc(c)
	if t.IdempotencyKey != "" {
		if s.turnRefs == nil {
			s.turnRefs = map[key][]string{}
		}
		for _, m := range t.Messages {
			s.turnRefs[ref] = append(s.turnRefs[ref], m.ID)
		}
	}
	for _, m := range t.Messages {
		s.putMessage(teamID, m)
	}
	s.streamAppend(teamID, streams.Conversation(c.ID), evs)
	for _, p := range t.Join {
		s.join(teamID, c.ID, p)
	}
	if t.Handoff != nil {
		s.putHandoff(teamID, *t.Handoff)
	}
	if t.PrevCurrent != c.CurrentAgent {
		if t.PrevCurrent != "" {
			s.convCounter(teamID, t.PrevCurrent, -1)
		}
		if c.CurrentAgent != "" {
			s.convCounter(teamID, c.CurrentAgent, 1)
		}
	}
	for slug, ms := range t.Latency {
		s.loadOf(teamID, slug).latencyMS = ms
	}
	s.decisions[key{teamID, t.Decision.ID}] = doc(t.Decision)
	if len(t.Carried) > 0 && s.resultMarkers == nil {
		s.resultMarkers = map[key]string{}
	}
	for _, r := range t.Carried {
		s.resultMarkers[key{teamID, r.Marker}] = r.MessageID
	}
	return nil
}

// CloseConversation implements conversations.Store: c (as read) closed,
// conditioned on the stored version being c's and open (ECONFLICT, reason
// ConversationChanged), and its current agent's counter released.
func (s *Store) CloseConversation(_ context.Context, teamID string, c conversations.Conversation, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.convCheck(teamID, c.ID, c.Version) {
		return apperr.New(apperr.ECONFLICT, "the conversation changed; read it and try again").WithReason("ConversationChanged")
	}
	c.Status, c.UpdatedAt, c.Version = conversations.StatusClosed, at, c.Version+1
	s.convs[key{teamID, c.ID}] = convDoc(c)
	if c.CurrentAgent != "" {
		s.convCounter(teamID, c.CurrentAgent, -1)
	}
	return nil
}

// RateMessage implements conversations.Store: the rating on the reply
// (which must exist and be an agent's: ENOTFOUND otherwise) and one rating
// per contributing agent, a later rating replacing an earlier one.
func (s *Store) RateMessage(_ context.Context, teamID string, f conversations.Feedback) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.messages[key{teamID, f.ConversationID}][f.MessageID]
	if !ok || r.role != conversations.AuthorAssistant {
		return apperr.NotFound("agent reply", f.MessageID)
	}
	rated := f.RatedAt.UTC().Format(time.RFC3339Nano)
	r.rating, r.ratedAt, r.comment = f.Rating, rated, f.Comment
	for _, a := range f.Agents {
		s.ratings[key{teamID, f.MessageID + "#" + a}] = ratingRow{agent: a, rating: f.Rating, query: f.Query, ratedAt: rated}
	}
	return nil
}

// RecentRatings implements expertgate.Source: ratings of replies made
// since (the key range starts at the floor id of since, as reply ids sort
// by time) and rated since, newest reply first, at most limit. Like the
// adapter's filter expression, "rated since" compares RFC 3339 strings
// with nanoseconds, which is not chronological within one second when the
// fractions have different lengths (a whole second "…:05Z" sorts after
// "…:05.5Z"); it is mirrored, not corrected.
func (s *Store) RecentRatings(_ context.Context, teamID string, since time.Time, limit int) ([]routing.Rating, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	from := ids.Floor("msg", since)
	bound := since.UTC().Format(time.RFC3339Nano)
	var rows []row[ratingRow]
	for k, r := range s.ratings {
		if k.team == teamID && k.id >= from {
			rows = append(rows, row[ratingRow]{sk: k.id, v: r})
		}
	}
	list, _, err := query(rows, true, "ratings", pageAll, func(r ratingRow) bool { return r.ratedAt >= bound })
	if err != nil {
		return nil, err
	}
	var out []routing.Rating
	for _, r := range list {
		if len(out) == limit {
			break
		}
		at, _ := time.Parse(time.RFC3339Nano, r.ratedAt)
		out = append(out, routing.Rating{Agent: r.agent, Rating: r.rating, Query: r.query, At: at})
	}
	return out, nil
}

// GetDecision implements conversations.Store. Returns ENOTFOUND. As from
// the adapter, the decision's TeamID is empty (it is not in the document).
func (s *Store) GetDecision(_ context.Context, teamID, id string) (cascade.Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.decisions[key{teamID, id}]
	if !ok {
		return cascade.Decision{}, apperr.NotFound("routing decision", id)
	}
	return readDoc[cascade.Decision](b), nil
}

// ListDecisions implements conversations.Store, newest first: the
// conversation filter selects (the adapter's index), Since bounds the key
// range by the floor id of the time, and strategy, agent (among the
// selected agents) and fallback filter after the limit.
func (s *Store) ListDecisions(_ context.Context, teamID string, f cascade.DecisionFilter, p paging.Page) ([]cascade.Decision, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	from := ""
	if !f.Since.IsZero() {
		from = ids.Floor("rdec", f.Since)
	}
	var rows []row[cascade.Decision]
	for k, b := range s.decisions {
		if k.team != teamID || k.id < from {
			continue
		}
		d := readDoc[cascade.Decision](b)
		if f.ConversationID != "" && d.ConversationID != f.ConversationID {
			continue
		}
		rows = append(rows, row[cascade.Decision]{sk: k.id, v: d})
	}
	keep := func(d cascade.Decision) bool {
		if f.Strategy != "" && string(d.Strategy) != f.Strategy {
			return false
		}
		if f.Agent != "" && !slices.Contains(d.SelectedAgents, f.Agent) {
			return false
		}
		if f.Fallback != nil && d.Fallback != *f.Fallback {
			return false
		}
		return true
	}
	return query(rows, true, "decisions:"+teamID+":"+f.ConversationID, p, keep)
}

// RecentDecisions implements conversations.Store: up to limit decisions
// made since, newest first.
func (s *Store) RecentDecisions(ctx context.Context, teamID string, since time.Time, limit int) ([]cascade.Decision, error) {
	return paging.Collect(limit, paging.MaxLimit, func(p paging.Page) ([]cascade.Decision, string, error) {
		return s.ListDecisions(ctx, teamID, cascade.DecisionFilter{Since: since}, p)
	})
}

// CommitHandoff implements conversations.Store: the conversation
// (ECONFLICT, reason ConversationChanged, when it moved on or closed), the
// handoff record, the note, the participants' roles, the agents'
// conversation counters and the shared handoff memory, at once; an id
// already taken is ECONFLICT with reason TransactionConflict. Then, as in
// the adapter and outside that transaction, the cached memory contexts of
// the memory's agents are dropped.
func (s *Store) CommitHandoff(ctx context.Context, teamID string, h conversations.HandoffChange) error {
	c := h.Conversation
	evs, err := messageEvents(teamID, c, []conversations.Message{h.Note})
	if err != nil {
		return err
	}
	err = func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.convCheck(teamID, c.ID, c.Version-1) {
			return changedErr("handoff")
		}
		if !s.handoffFree(teamID, h.Handoff) || !s.messageFree(teamID, h.Note.ConversationID, h.Note.ID) {
			return conflictErr("handoff")
		}
		if err := s.streamFree(teamID, streams.Conversation(c.ID), evs); err != nil {
			return err
		}
		if h.Memory != nil {
			if _, taken := s.memories[key{teamID, h.Memory.ID}]; taken {
				return conflictErr("handoff")
			}
		}
		s.convs[key{teamID, c.ID}] = convDoc(c)
		s.putHandoff(teamID, h.Handoff)
		s.putMessage(teamID, h.Note)
		s.streamAppend(teamID, streams.Conversation(c.ID), evs)
		for _, p := range h.Roles {
			s.join(teamID, c.ID, p)
		}
		if h.PrevCurrent != c.CurrentAgent {
			if h.PrevCurrent != "" {
				s.convCounter(teamID, h.PrevCurrent, -1)
			}
			s.convCounter(teamID, c.CurrentAgent, 1)
		}
		if h.Memory != nil {
			s.memories[key{teamID, h.Memory.ID}] = doc(*h.Memory)
		}
		return nil
	}()
	if err != nil || h.Memory == nil {
		return err
	}
	return s.DropContexts(ctx, teamID, append([]string{h.Memory.Author}, h.Memory.Agents...))
}

// ListHandoffs implements conversations.Store, oldest first.
func (s *Store) ListHandoffs(_ context.Context, teamID, convID string) ([]conversations.Handoff, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rows []row[conversations.Handoff]
	for id, b := range s.handoffs[key{teamID, convID}] {
		rows = append(rows, row[conversations.Handoff]{sk: id, v: readDoc[conversations.Handoff](b)})
	}
	list, _, err := query(rows, false, "handoffs", pageAll, nil)
	return list, err
}

// SetParticipants implements conversations.Store: the conversation must be
// open (ECONFLICT, reason ConversationClosed; the adapter's condition on a
// missing conversation fails the same way, so an unknown conversation is
// reported as closed too), and each agent removed an active participant
// (ENOTFOUND naming the first that is not). Added agents join as in a
// turn: one that left comes back with its first role and join time.
func (s *Store) SetParticipants(_ context.Context, teamID, convID string, add []conversations.Participant, remove []string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.convs[key{teamID, convID}]
	if !ok || readDoc[conversations.Conversation](b).Status != conversations.StatusOpen {
		return apperr.New(apperr.ECONFLICT, "conversation is closed").WithReason("ConversationClosed")
	}
	parts := s.parts[key{teamID, convID}]
	for _, slug := range remove {
		p, ok := parts[slug]
		if !ok || p.LeftAt != nil {
			return apperr.NotFound("participant", slug)
		}
	}
	for _, p := range add {
		s.join(teamID, convID, p)
	}
	left := at.UTC()
	for _, slug := range remove {
		p := s.parts[key{teamID, convID}][slug]
		p.LeftAt = &left
		s.parts[key{teamID, convID}][slug] = p
	}
	return nil
}

// TurnOf implements conversations.Replays.
func (s *Store) TurnOf(_ context.Context, teamID, k string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.turnRefs[key{teamID, k}]), nil
}
