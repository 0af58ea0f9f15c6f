package conversations

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
)

// Limits of the messages long-poll (GET …/messages?after=…&wait=N).
const (
	// MaxWait bounds wait, in seconds: with the poll's margin it stays
	// well inside the function's 29 s and API Gateway's 30 s.
	MaxWait = 20
	// PollInterval is how often a waiting read looks again: a result
	// reaches a waiting client within about half a second, and a 20 s
	// wait costs at most about 50 queries.
	PollInterval = 400 * time.Millisecond
	// WaitMargin is the time a waiting read leaves before its context's
	// deadline to answer.
	WaitMargin = 2 * time.Second
)

// MessageTail reads what a conversation received after a message.
type MessageTail interface {
	// ListMessagesAfter returns a page of the conversation's messages
	// whose ids sort after after (ids sort by creation time), oldest
	// first; the page token is bound to the conversation and after.
	ListMessagesAfter(ctx context.Context, teamID, convID, after string, p paging.Page) ([]Message, string, error)
}

// MessagesAfter returns a page of the messages of a conversation that
// came after the message after, oldest first: what a client that has seen
// up to after has not seen yet (the messages a delegated task, report or
// session posted when it ended, a turn sent from elsewhere). With wait > 0
// it waits until there is at least one, and answers an empty page when
// wait runs out (or its context's deadline comes within WaitMargin). after
// is a message id (of this conversation, or any point of its timeline);
// ids are made when a message is, so a turn's messages, written when the
// turn commits, have ids from before: a client should read from the last
// message it holds, its own turn's included. Returns EINVALID, ENOTFOUND.
func (s *Service) MessagesAfter(ctx context.Context, teamID, id, after string, wait time.Duration, p paging.Page) ([]Message, string, error) {
	p, err := p.Normalize()
	if err != nil {
		return nil, "", err
	}
	if !ids.Valid("msg", after) {
		return nil, "", apperr.Invalid("after", "after must be a message id (msg_…)")
	}
	if wait < 0 || wait > MaxWait*time.Second {
		return nil, "", apperr.Invalid("wait", "wait must be a number of seconds from 0 to %d", MaxWait)
	}
	if err := s.mine(ctx, teamID, id); err != nil {
		return nil, "", err
	}
	until := time.Now().Add(wait)
	if d, ok := ctx.Deadline(); ok && d.Add(-WaitMargin).Before(until) {
		until = d.Add(-WaitMargin)
	}
	found := false
	for {
		list, next, err := s.tail.ListMessagesAfter(ctx, teamID, id, after, p)
		if err != nil || len(list) > 0 {
			return list, next, err
		}
		if !found {
			// Only an empty page needs the conversation read, for a 404
			// (a wait on a conversation that does not exist ends here).
			if _, err := s.store.GetConversation(ctx, teamID, id); err != nil {
				return nil, "", err
			}
			found = true
		}
		left := time.Until(until)
		if left <= 0 {
			return []Message{}, "", nil
		}
		// The last look is when the wait ends.
		select {
		case <-ctx.Done():
			return []Message{}, "", nil
		case <-time.After(min(PollInterval, left)):
		}
	}
}
