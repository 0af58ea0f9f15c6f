package memstore

import (
	"context"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/streams"
)

// PostResult implements results.Store: the marker (absent: else posted is
// false and nothing is written), the message and its event on the
// conversation's stream (ResultPosted), and the conversation's
// message_count, version and event_seq, at once (the adapter's write is
// conditioned on the version it read, and tried again on a newer one:
// under the lock here, the version read is the version written); ENOTFOUND when the conversation does
// not exist. As in the adapter the conversation may be closed (a result
// still belongs to its record), and the order of the conditions is
// marker, conversation, message.
func (s *Store) PostResult(_ context.Context, teamID string, m conversations.Message, marker string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resultMarkers == nil {
		s.resultMarkers = map[key]string{}
	}
	mk := key{teamID, marker}
	if _, done := s.resultMarkers[mk]; done {
		return false, nil
	}
	ck := key{teamID, m.ConversationID}
	b, ok := s.convs[ck]
	if !ok {
		return false, apperr.NotFound("conversation", m.ConversationID)
	}
	if !s.messageFree(teamID, m.ConversationID, m.ID) {
		return false, conflictErr("result")
	}
	c := readDoc[conversations.Conversation](b)
	c.ID, c.EventSeq = m.ConversationID, s.streamHead(teamID, streams.Conversation(m.ConversationID))+1
	evs, err := messageEvents(teamID, c, []conversations.Message{m})
	if err == nil {
		err = s.streamFree(teamID, streams.Conversation(m.ConversationID), evs)
	}
	if err != nil {
		return false, err
	}
	c.MessageCount++
	c.Version++
	c.UpdatedAt = m.CreatedAt
	s.convs[ck] = convDoc(c)
	s.putMessage(teamID, m)
	s.streamAppend(teamID, streams.Conversation(m.ConversationID), evs)
	s.resultMarkers[mk] = m.ID
	return true, nil
}
