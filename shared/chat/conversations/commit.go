package conversations

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
)

// turnMessages are what a turn adds, in conversation order: the user's
// message, the routing note, the return's note, then the reply or, when
// every agent failed, a system note saying so.
func (s *Service) turnMessages(user Message, note *Message, ret *handover, out outcome) []Message {
	msgs := []Message{user}
	if note != nil {
		msgs = append(msgs, *note)
	}
	if ret != nil {
		msgs = append(msgs, ret.note)
	}
	if out.reply != nil {
		msgs = append(msgs, *out.reply)
		if ret == nil && out.handoff != nil {
			msgs = append(msgs, out.handoff.note)
		}
		return msgs
	}
	return append(msgs, Message{ID: ids.New("msg"), ConversationID: user.ConversationID, Role: AuthorSystem, Content: failureNote(out.attempts), CreatedAt: s.now.UTC(), DecisionID: user.DecisionID, ReplyTo: user.ID})
}

func failureNote(attempts []cascade.Attempt) string {
	parts := make([]string, len(attempts))
	for i, a := range attempts {
		parts[i] = a.Agent + " " + strings.ReplaceAll(a.Outcome, "_", " ")
	}
	return "No agent could answer this message (" + strings.Join(parts, ", ") + "). Please try again."
}

// latencies is the new moving average of each answering agent's reply
// latency (the gate's load signal), from the gate's view of it; it is
// written with the turn.
func latencies(loads routing.Loads, out outcome) map[string]float64 {
	avg := map[string]float64{}
	for _, slug := range out.answeredBy {
		lat, ok := out.latency[slug]
		if !ok {
			continue
		}
		avg[slug] = lat
		if prev := loads.Of(slug).LatencyMS; prev > 0 {
			avg[slug] = 0.7*prev + 0.3*lat
		}
	}
	return avg
}

// maxCommitAttempts bounds the retries of a turn that lost the race for
// its conversation to concurrent turns.
const maxCommitAttempts = 12

// change is what a turn writes, whatever the conversation's state when it
// commits.
type change struct {
	msgs       []Message
	answeredBy []string
	decision   cascade.Decision
	// ret is the handover the turn commits: a return ("@kyra") or the
	// reply's agent's handoff_to.
	ret     *handover
	latency map[string]float64
	// lastHandoff is the conversation's last handoff when the turn read
	// it: a handoff_to is built on that state.
	lastHandoff string
	// carried is the work whose result the reply carries (Turn.Carried).
	carried []CarriedResult
}

func lastHandoffID(c Conversation) string {
	if c.LastHandoff == nil {
		return ""
	}
	return c.LastHandoff.ID
}

// commit writes the turn, re-reading the conversation when a concurrent
// turn moved it on (the replies stand; only the conversation's state is
// recomputed). Every attempt, the first included, needs the commit reserve
// left before ctx's deadline; without it the turn is EUNAVAILABLE and
// nothing was stored (a lost race stores nothing).
func (s *Service) commit(ctx context.Context, teamID string, conv Conversation, ch change) error {
	for attempt := 0; ; attempt++ {
		if !timeLeft(ctx, s.commitReserve) {
			return tooLate("turn")
		}
		cctx, cancel := s.commitContext(ctx)
		t := turnOn(conv, ch, s.now.UTC())
		t.IdempotencyKey = idempotency.KeyFor(ctx, RefKind)
		err := s.store.CommitTurn(cctx, teamID, t)
		cut := commitCut(cctx, err)
		cancel()
		if cut {
			s.log.ErrorContext(ctx, "turn commit cut off by the deadline; outcome unknown", "conversation_id", conv.ID, "error", err.Error())
			return unknownOutcome("turn", err)
		}
		if err == nil || attempt >= maxCommitAttempts-1 || !errors.Is(err, ErrChanged) {
			return err
		}
		// Concurrent turns in one conversation: back off a little, with
		// jitter, so the losers do not collide again at once.
		if !sleep(ctx, time.Duration(5+rand.IntN(20*(attempt+1)))*time.Millisecond) {
			return tooLate("turn")
		}
		if conv, err = s.store.GetConversation(ctx, teamID, conv.ID); err != nil {
			if ctx.Err() != nil {
				return tooLate("turn")
			}
			return err
		}
		if conv.Status != StatusOpen {
			return apperr.New(apperr.ECONFLICT, "conversation was closed during the turn").WithReason("ConversationClosed")
		}
		if ret := ch.ret; ret != nil && ret.handoff.Kind == KindHandoff && lastHandoffID(conv) != ch.lastHandoff {
			// Another handoff landed meanwhile: this one was decided on
			// the old state.
			return apperr.New(apperr.ECONFLICT, "the conversation was handed over during the turn; send the message again").WithReason("ConversationChanged")
		}
		if ret := ch.ret; ret != nil && ret.handoff.Kind == KindReturn && (conv.CurrentAgent != ret.handoff.From || conv.PreviousAgent != ret.handoff.To) {
			// A handoff or return landed meanwhile: the return this turn
			// asked for was built on the old state and would overwrite it.
			return apperr.New(apperr.ECONFLICT, "the conversation was handed over during the turn; send the message again").WithReason("ConversationChanged")
		}
	}
}

// turnOn is the turn as a change of conv: one version on, its messages
// counted, the first answering agent current, every answering agent a
// participant, and a return's changes (handover.apply, its roles, record
// and memory).
func turnOn(conv Conversation, ch change, at time.Time) Turn {
	msgs, answeredBy, ret := ch.msgs, ch.answeredBy, ch.ret
	next := conv
	next.Version++
	next.MessageCount += len(msgs)
	next.EventSeq += int64(len(msgs)) // one MessagePosted each, written with the turn
	next.UpdatedAt = at
	if len(answeredBy) > 0 {
		next.CurrentAgent = answeredBy[0]
		if next.PrimaryAgent == "" {
			next.PrimaryAgent = next.CurrentAgent
		}
	}
	t := Turn{PrevCurrent: conv.CurrentAgent, Messages: msgs, Decision: ch.decision, Latency: ch.latency, Carried: ch.carried}
	if ret != nil {
		next = ret.apply(next)
		t.Join = append(t.Join, ret.roles...)
		t.Handoff, t.Memory = &ret.handoff, ret.memory
	}
	for _, slug := range answeredBy {
		if ret != nil && (slug == ret.handoff.To || slug == ret.handoff.From) {
			continue // its role is the handover's
		}
		role := RoleInvited
		if slug == next.PrimaryAgent {
			role = RolePrimary
		}
		t.Join = append(t.Join, Participant{Agent: slug, Role: role, JoinedAt: at})
	}
	t.Conversation = next
	return t
}
