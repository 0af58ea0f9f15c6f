// Package conversationfake is the in-memory fake of conversations.Store
// (conversations, their participants, messages, handoffs and ratings,
// and the turn's and handoff's cross-store commits), as
// shared/store/conversationstore is the DynamoDB one; both are held to
// the store contract (shared/testkit/storetest).
//
// Conversations, messages, decisions and handoffs are stored as the
// adapter stores them: a JSON document of the domain value (so fields
// tagged json:"-", such as TeamID, do not come back from listings) plus
// the attributes conditions need.
package conversationfake

import (
	"context"
	"slices"
	"time"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/agentfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
)

var (
	_ conversations.Store          = (*Conversations)(nil)
	_ conversations.MessageTail    = (*Conversations)(nil)
	_ conversations.AgentDirectory = (*Conversations)(nil)
	_ conversations.Replays        = (*Conversations)(nil)
)

// Conversations is conversations.Store on a memtable.Table: its own
// participants, messages and handoffs, the conversations themselves
// (memtable.KindConversation, which tasks and results read), and what a
// turn or handoff writes with them: the decision, the ratings, a memory
// and the agents' counters (agentfake). Safe for concurrent use.
type Conversations struct {
	*agentfake.Agents
	tb *memtable.Table
}

// New returns the conversations of tb (nil: a table of their own).
func New(tb *memtable.Table) *Conversations {
	if tb == nil {
		tb = memtable.New()
	}
	return &Conversations{Agents: agentfake.New(tb), tb: tb}
}

// state is the conversations' part of the table.
type state struct {
	parts    map[memtable.Key]map[string]conversations.Participant // by team and conversation id, then slug
	messages map[memtable.Key]map[string]*messageRow               // by team and conversation id, then message id
	handoffs map[memtable.Key]map[string][]byte                    // by team and conversation id, then handoff id
}

func stateOf(tb *memtable.Table) *state {
	return memtable.Part(tb, "conversations", func() *state {
		return &state{parts: map[memtable.Key]map[string]conversations.Participant{},
			messages: map[memtable.Key]map[string]*messageRow{}, handoffs: map[memtable.Key]map[string][]byte{}}
	})
}

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
	ratedAt time.Time
	comment string
}

func (r *messageRow) message() conversations.Message {
	st := memtable.ReadDoc[storedMessage](r.doc)
	m := st.Message
	m.Query = st.Query
	if r.rating != 0 {
		m.Rating = r.rating
	}
	return m
}

// convDoc is the conversation's document: without its participants.
func convDoc(c conversations.Conversation) []byte {
	c.Participants = nil
	return memtable.Doc(c)
}

// convCheck is the condition on the conversation item of a turn, handoff
// or close: it exists at version (the one read) and is open. Call with the
// table locked.
func convCheck(tb *memtable.Table, teamID, id string, version int) bool {
	b, ok := memtable.Docs(tb, memtable.KindConversation)[memtable.Key{Team: teamID, ID: id}]
	if !ok {
		return false
	}
	c := memtable.ReadDoc[conversations.Conversation](b)
	return c.Version == version && c.Status == conversations.StatusOpen
}

// join is the adapter's participant upsert: a returning agent keeps its
// first role (unless the change sets it) and join time, and is no longer
// marked as having left. Call with the table locked.
func join(tb *memtable.Table, teamID, convID string, p conversations.Participant) {
	st := stateOf(tb)
	k := memtable.Key{Team: teamID, ID: convID}
	if st.parts[k] == nil {
		st.parts[k] = map[string]conversations.Participant{}
	}
	cur, ok := st.parts[k][p.Agent]
	if !ok {
		cur = conversations.Participant{Agent: p.Agent, Role: p.Role, JoinedAt: p.JoinedAt.UTC()}
	}
	if p.SetRole {
		cur.Role = p.Role
	}
	cur.LeftAt = nil
	st.parts[k][p.Agent] = cur
}

// convCounter moves an agent's active-conversation counter. Call with the
// table locked.
func convCounter(tb *memtable.Table, teamID, slug string, delta int) {
	agentfake.LoadOf(tb, teamID, slug).ActiveConversations += delta
}

// MessageFree reports whether a message id is unused in a conversation:
// the condition of every write that stores a message (resultfake's too).
// Call with the table locked.
func MessageFree(tb *memtable.Table, teamID, convID, msgID string) bool {
	_, taken := stateOf(tb).messages[memtable.Key{Team: teamID, ID: convID}][msgID]
	return !taken
}

// PutMessage stores a message of its conversation (MessageFree passed).
// Call with the table locked.
func PutMessage(tb *memtable.Table, teamID string, m conversations.Message) {
	st := stateOf(tb)
	k := memtable.Key{Team: teamID, ID: m.ConversationID}
	if st.messages[k] == nil {
		st.messages[k] = map[string]*messageRow{}
	}
	st.messages[k][m.ID] = &messageRow{doc: memtable.Doc(storedMessage{m, m.Query}), role: m.Role}
}

func handoffFree(tb *memtable.Table, teamID string, h conversations.Handoff) bool {
	_, taken := stateOf(tb).handoffs[memtable.Key{Team: teamID, ID: h.ConversationID}][h.ID]
	return !taken
}

func putHandoff(tb *memtable.Table, teamID string, h conversations.Handoff) {
	st := stateOf(tb)
	k := memtable.Key{Team: teamID, ID: h.ConversationID}
	if st.handoffs[k] == nil {
		st.handoffs[k] = map[string][]byte{}
	}
	st.handoffs[k][h.ID] = memtable.Doc(h)
}

// changedErr is the adapter's answer when the conversation's own
// condition failed (another item's is memtable.Conflict): it is conversations.ErrChanged inside the client-facing
// ECONFLICT, as the DynamoDB adapter returns it.
func changedErr(what string) error {
	return apperr.Wrap(apperr.ECONFLICT, conversations.ErrChanged, "the conversation changed during the %s", what).WithReason("ConversationChanged")
}

// CreateConversation implements conversations.Store: the conversation
// (ECONFLICT if it exists), its primary participant and the primary's
// conversation counter. Neither the team nor the agent is checked, as in
// the adapter (the service checks the agent).
func (s *Conversations) CreateConversation(_ context.Context, c conversations.Conversation, primary *conversations.Participant) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	convs := memtable.Docs(s.tb, memtable.KindConversation)
	k := memtable.Key{Team: c.TeamID, ID: c.ID}
	if _, ok := convs[k]; ok {
		return apperr.New(apperr.ECONFLICT, "conversation already exists")
	}
	convs[k] = convDoc(c)
	if primary != nil {
		join(s.tb, c.TeamID, c.ID, *primary)
		convCounter(s.tb, c.TeamID, primary.Agent, 1)
	}
	return nil
}

// GetConversation implements conversations.Store, without participants.
// Returns ENOTFOUND.
func (s *Conversations) GetConversation(_ context.Context, teamID, id string) (conversations.Conversation, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	b, ok := memtable.Docs(s.tb, memtable.KindConversation)[memtable.Key{Team: teamID, ID: id}]
	if !ok {
		return conversations.Conversation{}, apperr.NotFound("conversation", id)
	}
	c := memtable.ReadDoc[conversations.Conversation](b)
	c.TeamID = teamID
	c.EventSeq = memtable.Head(s.tb, teamID, streams.Conversation(id)) // the adapter's event_seq
	return c, nil
}

// MessageEvents are the stream events of msgs stored with c (its new
// state), numbered as the adapter numbers them and checked as it checks
// them before it sends the change (resultfake's results too).
func MessageEvents(teamID string, c conversations.Conversation, msgs []conversations.Message) ([]streams.Event, error) {
	evs, err := conversations.MessageEvents(teamID, c.EventSeq, msgs)
	if err != nil {
		return nil, memtable.Internal(err.Error())
	}
	return evs, memtable.StreamNumbered(c.EventSeq, evs)
}

// ListConversations implements conversations.Store, newest first, each
// with its TeamID (the adapter's item stores it); owner's only when set.
func (s *Conversations) ListConversations(_ context.Context, teamID, owner string, p paging.Page) ([]conversations.Conversation, string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var rows []memtable.Row[conversations.Conversation]
	for k, b := range memtable.Docs(s.tb, memtable.KindConversation) {
		if k.Team == teamID {
			c := memtable.ReadDoc[conversations.Conversation](b)
			c.TeamID = teamID // the adapter's item stores team_id
			c.EventSeq = memtable.Head(s.tb, teamID, streams.Conversation(k.ID))
			rows = append(rows, memtable.Row[conversations.Conversation]{SK: k.ID, V: c})
		}
	}
	if owner == "" {
		return memtable.Query(rows, true, "convs:"+teamID, p, nil)
	}
	// The adapter's filter on owner, refilled as it refills it.
	return memtable.QueryFill(rows, true, "convs:"+teamID+":owner:"+owner, p, func(c conversations.Conversation) bool { return c.Owner == owner })
}

// ListAgentConversations implements conversations.Store as the adapter's
// index of participants: every conversation the agent joined (left
// since or not), newest first (by id), paged, each read as
// ListConversations reads it.
func (s *Conversations) ListAgentConversations(_ context.Context, teamID, agent string, p paging.Page) ([]conversations.Conversation, string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var rows []memtable.Row[string]
	for k, parts := range stateOf(s.tb).parts {
		if _, ok := parts[agent]; ok && k.Team == teamID {
			rows = append(rows, memtable.Row[string]{SK: k.ID, V: k.ID})
		}
	}
	convIDs, next, err := memtable.Query(rows, true, "convagent:"+teamID+":"+agent, p, nil)
	if err != nil {
		return nil, "", err
	}
	list := []conversations.Conversation{}
	convs := memtable.Docs(s.tb, memtable.KindConversation)
	for _, id := range convIDs {
		if b, ok := convs[memtable.Key{Team: teamID, ID: id}]; ok {
			c := memtable.ReadDoc[conversations.Conversation](b)
			c.TeamID = teamID
			c.EventSeq = memtable.Head(s.tb, teamID, streams.Conversation(id))
			list = append(list, c)
		}
	}
	return list, next, nil
}

// ListParticipants implements conversations.Store: every agent that
// joined, by slug, including those that left (LeftAt set). Like the
// adapter it reads one page of 100.
func (s *Conversations) ListParticipants(_ context.Context, teamID, id string) ([]conversations.Participant, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var rows []memtable.Row[conversations.Participant]
	for slug, p := range stateOf(s.tb).parts[memtable.Key{Team: teamID, ID: id}] {
		p.LeftAt = memtable.CloneTime(p.LeftAt)
		rows = append(rows, memtable.Row[conversations.Participant]{SK: slug, V: p})
	}
	list, _, err := memtable.Query(rows, false, "parts", paging.Page{Limit: 100}, nil)
	return list, err
}

func (s *Conversations) messageRows(teamID, convID string) []memtable.Row[conversations.Message] {
	var rows []memtable.Row[conversations.Message]
	for id, r := range stateOf(s.tb).messages[memtable.Key{Team: teamID, ID: convID}] {
		rows = append(rows, memtable.Row[conversations.Message]{SK: id, V: r.message()})
	}
	return rows
}

// ListMessages implements conversations.Store, oldest first.
func (s *Conversations) ListMessages(_ context.Context, teamID, id string, p paging.Page) ([]conversations.Message, string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	return memtable.Query(s.messageRows(teamID, id), false, "msgs:"+teamID+":"+id, p, nil)
}

// ListMessagesAfter implements conversations.MessageTail: the messages
// whose ids sort after after, oldest first, paged as the adapter's query
// (the token bound to the conversation and after).
func (s *Conversations) ListMessagesAfter(_ context.Context, teamID, id, after string, p paging.Page) ([]conversations.Message, string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var rows []memtable.Row[conversations.Message]
	for _, r := range s.messageRows(teamID, id) {
		if r.SK > after {
			rows = append(rows, r)
		}
	}
	return memtable.Query(rows, false, "msgs-after:"+teamID+":"+id+":"+after, p, nil)
}

// RecentMessages implements conversations.Store: the last n messages,
// oldest first (nil when there are none; n <= 0 reads all, as the
// adapter's query without a limit).
func (s *Conversations) RecentMessages(_ context.Context, teamID, id string, n int) ([]conversations.Message, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	list, _, err := memtable.Query(s.messageRows(teamID, id), true, "recent", paging.Page{Limit: n}, nil)
	if len(list) == 0 {
		return nil, err
	}
	slices.Reverse(list)
	return list, err
}

// GetMessage implements conversations.Store. Returns ENOTFOUND.
func (s *Conversations) GetMessage(_ context.Context, teamID, convID, msgID string) (conversations.Message, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	r, ok := stateOf(s.tb).messages[memtable.Key{Team: teamID, ID: convID}][msgID]
	if !ok {
		return conversations.Message{}, apperr.NotFound("message", msgID)
	}
	return r.message(), nil
}
