package sessions

import (
	"fmt"
	"slices"
	"time"
)

// MessageType is the kind of a protocol message (seed 003, phase 11), plus
// the vote of a consensus.
type MessageType string

// The message taxonomy.
const (
	MsgProposal     MessageType = "proposal"
	MsgCritique     MessageType = "critique"
	MsgRevision     MessageType = "revision"
	MsgApproval     MessageType = "approval"
	MsgRejection    MessageType = "rejection"
	MsgRequestInfo  MessageType = "request_info"
	MsgInfoResponse MessageType = "info_response"
	MsgDelegation   MessageType = "delegation"
	MsgVote         MessageType = "vote"
)

// MessageTypes lists the taxonomy.
var MessageTypes = []MessageType{MsgProposal, MsgCritique, MsgRevision, MsgApproval, MsgRejection, MsgRequestInfo, MsgInfoResponse, MsgDelegation, MsgVote}

// Message statuses.
const (
	MsgAccepted      = "accepted"
	MsgNeedsRevision = "needs_revision"
	MsgRejected      = "rejected"
	// MsgRefused is a message that broke the protocol: recorded, never
	// acted on.
	MsgRefused = "refused"
)

// Message is one entry of the collaboration trace.
type Message struct {
	Seq       int            `json:"seq"`
	Round     int            `json:"round,omitempty"`
	Sender    string         `json:"sender"`
	Recipient string         `json:"recipient"`
	Type      MessageType    `json:"message_type"`
	Content   string         `json:"content"`
	Data      map[string]any `json:"structured_data,omitempty"`
	Status    string         `json:"status"`
	// Violation is why a refused message broke the protocol.
	Violation string    `json:"violation,omitempty"`
	At        time.Time `json:"at"`
}

// ProtocolError is a message that breaks a rule; Rule is its number in
// seed 003 phase 11.
type ProtocolError struct {
	Rule int
	Msg  string
}

func (e *ProtocolError) Error() string { return fmt.Sprintf("protocol rule %d: %s", e.Rule, e.Msg) }

// protocolState is what the rules need to know of the accepted messages
// before a new one.
type protocolState struct {
	started    bool // a proposal or delegation opened the session
	work       bool // a proposal or revision exists
	critiqued  bool // a critique or rejection followed the latest work
	converged  bool // an approval ended the session
	terminated bool // a rejection after the last round ended it
	lastRound  int
}

func replay(accepted []Message, maxRounds int) protocolState {
	var st protocolState
	for _, m := range accepted {
		if m.Status == MsgRefused {
			continue
		}
		st.apply(m, maxRounds)
	}
	return st
}

func (st *protocolState) apply(m Message, maxRounds int) {
	switch m.Type {
	case MsgProposal, MsgDelegation:
		st.started = true
		if m.Type == MsgProposal {
			st.work, st.critiqued = true, false
		}
	case MsgRevision:
		st.work, st.critiqued = true, false
	case MsgCritique:
		st.critiqued = true
	case MsgRejection:
		st.critiqued = true
		if m.Round >= maxRounds {
			st.terminated = true
		}
	case MsgApproval:
		// Each reviewer's approval is its verdict on the latest work; the
		// session converges when every reviewer of the round approved,
		// which the round's decision records as the converging approval.
		st.critiqued = true
		if converging(m) {
			st.converged = true
		}
	}
	st.lastRound = max(st.lastRound, m.Round)
}

// converging reports whether m is the approval that ends the session.
func converging(m Message) bool {
	c, _ := m.Data["converged"].(bool)
	return m.Type == MsgApproval && c
}

// Check applies the protocol rules to next, given the messages accepted
// so far (in order):
//
//  1. a session starts with a proposal or a delegation;
//  2. a critique follows a proposal or a revision;
//  3. a revision follows a critique (or a rejection that asks for one);
//  4. an approval ends the session: nothing follows the convergence;
//  5. a rejection after the last round ends it with failure;
//  6. request_info and info_response may come at any point.
//
// Votes follow the opening delegation or proposal (rule 1 applies to them).
func Check(history []Message, next Message, maxRounds int) error {
	st := replay(history, maxRounds)
	if next.Type == MsgRequestInfo || next.Type == MsgInfoResponse {
		return nil
	}
	if !slices.Contains(MessageTypes, next.Type) {
		return &ProtocolError{Rule: 0, Msg: fmt.Sprintf("unknown message type %q", next.Type)}
	}
	if st.converged {
		return &ProtocolError{Rule: 4, Msg: "the session converged on an approval; nothing follows it"}
	}
	if st.terminated {
		return &ProtocolError{Rule: 5, Msg: "a rejection after the last round ended the session"}
	}
	if !st.started && next.Type != MsgProposal && next.Type != MsgDelegation {
		return &ProtocolError{Rule: 1, Msg: fmt.Sprintf("a session starts with a proposal or a delegation, not a %s", next.Type)}
	}
	switch next.Type {
	case MsgCritique, MsgApproval, MsgRejection:
		if !st.work {
			return &ProtocolError{Rule: 2, Msg: fmt.Sprintf("a %s must follow a proposal or a revision", next.Type)}
		}
	case MsgRevision:
		if !st.critiqued {
			return &ProtocolError{Rule: 3, Msg: "a revision must follow a critique"}
		}
	}
	return nil
}

// Trace is the audit trail of a session (seed 003, phase 11).
type Trace struct {
	SessionID    string    `json:"session_id"`
	Pattern      Pattern   `json:"pattern"`
	Status       Status    `json:"status"`
	Participants []string  `json:"participants"`
	TotalTurns   int       `json:"total_turns"`
	Outcome      string    `json:"outcome"`
	Convergence  string    `json:"convergence_reason"`
	DurationMs   int64     `json:"duration_ms"`
	ModelCalls   int       `json:"model_calls"`
	Tokens       int       `json:"tokens"`
	CostUSD      float64   `json:"cost_usd"`
	Refused      int       `json:"refused_messages"`
	Messages     []Message `json:"messages"`
	// SlotWaits are the stages that waited for a slot (Session.SlotWaits).
	SlotWaits []SlotWait `json:"slot_waits,omitempty"`
}

// Outcomes of a trace.
const (
	OutcomeConverged = "converged"
	OutcomeCompleted = "completed"
	OutcomeMaxRounds = "max_rounds"
	OutcomeFailed    = "failed"
	OutcomeTimedOut  = "timed_out"
	OutcomeCancelled = "cancelled"
	OutcomeRejected  = "rejected"
	OutcomePending   = "in_progress"
)
