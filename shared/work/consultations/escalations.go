package consultations

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// detect runs the loop checks before an exchange of c with message msg:
// the same question a third time within the hour, a circular wait, a
// stall. (The active limit is the store's condition.)
func (s *Service) detect(c Consultation, history []Consultation, msg string, now time.Time) *Loop {
	var same []string
	for _, h := range history {
		if h.ID == c.ID || h.RequestingAgent != c.RequestingAgent || now.Sub(h.CreatedAt) > IdenticalWindow {
			continue
		}
		if Similarity(msg, h.Question) > IdenticalThreshold {
			same = append(same, h.ID)
			continue
		}
		for _, e := range h.Exchanges {
			if e.Type == "clarification" && Similarity(msg, e.Message) > IdenticalThreshold {
				same = append(same, h.ID)
				break
			}
		}
	}
	if c.ID != "" {
		for _, e := range c.Exchanges {
			// Exchanges are numbered from 1 (ask), so `> 0` and `>= 0` keep
			// the same ones: a mutation testing survivor that changes nothing.
			if e.Number > 0 && Similarity(msg, e.Message) > IdenticalThreshold {
				same = append(same, fmt.Sprintf("%s#%d", c.ID, e.Number))
			}
		}
	}
	if len(same)+1 >= IdenticalRepeats {
		return &Loop{Type: LoopIdentical, DetectedAt: now, Evidence: map[string]any{
			"repeats": len(same) + 1, "previous": same, "threshold": IdenticalThreshold, "window": "1h",
			"description": fmt.Sprintf("%s asked a near-identical question %d times within an hour", c.RequestingAgent, len(same)+1)}}
	}
	for _, h := range history {
		// A stale consultation is abandoned, not waited on.
		if h.ID != c.ID && h.Status.Active() && !h.Stale(now) && h.RequestingAgent == c.ConsultedAgent && h.ConsultedAgent == c.RequestingAgent {
			return &Loop{Type: LoopCircular, DetectedAt: now, Evidence: map[string]any{
				"waiting_on_each_other": []string{c.RequestingAgent, c.ConsultedAgent}, "open_consultation": h.ID,
				"description": fmt.Sprintf("%s waits on %s (%s) while %s asks %s", h.RequestingAgent, h.ConsultedAgent, h.ID, c.RequestingAgent, c.ConsultedAgent)}}
		}
	}
	if len(c.Exchanges) >= MaxExchanges {
		return &Loop{Type: LoopStall, DetectedAt: now, Evidence: map[string]any{
			"exchanges": len(c.Exchanges), "limit": MaxExchanges,
			"description": fmt.Sprintf("%d exchanges without a resolution", len(c.Exchanges))}}
	}
	return nil
}

func (s *Service) newEscalation(c Consultation, loop Loop) Escalation {
	return Escalation{TeamID: c.TeamID, ID: ids.New("esc"), ConsultationID: c.ID, RequestingAgent: c.RequestingAgent,
		ConsultedAgent: c.ConsultedAgent, Question: c.Question, Type: loop.Type, Evidence: loop.Evidence,
		Status: EscalationOpen, CreatedAt: loop.DetectedAt}
}

// escalateNew records a new consultation escalated at once.
func (s *Service) escalateNew(ctx context.Context, c Consultation, loop Loop) (Consultation, error) {
	e := s.newEscalation(c, loop)
	c.Status, c.Loop, c.EscalationID = Escalated, &loop, e.ID
	if err := s.Store.CreateEscalated(ctx, c, e); err != nil {
		if id, ok := idempotency.ReplayedID(err); ok {
			return s.replay(ctx, c.TeamID, id, nil)
		}
		return Consultation{}, err
	}
	s.announce(ctx, c, e)
	return c, nil
}

// escalate moves an existing consultation to escalated: one that was
// active (its answer failed) gives its slot back in the same transaction;
// a completed one (a follow-up caught as a loop before it reopened it)
// holds none.
func (s *Service) escalate(ctx context.Context, c Consultation, loop Loop) (Consultation, error) {
	e := s.newEscalation(c, loop)
	release := c.Status.Active()
	c.Status, c.Loop, c.EscalationID, c.CompletedAt = Escalated, &loop, e.ID, nil
	c.Version++
	c.UpdatedAt = loop.DetectedAt
	if err := s.Store.SaveConsultation(ctx, Save{Consultation: c, Release: release, Escalation: &e}); err != nil {
		return Consultation{}, changed(err)
	}
	s.announce(ctx, c, e)
	return c, nil
}

func (s *Service) announce(ctx context.Context, c Consultation, e Escalation) {
	// The escalation is stored and listed; a lost event only loses the
	// page, so it is logged rather than failing the request.
	if err := s.Bus.Publish(ctx, DetailType, EscalatedEvent{TeamID: c.TeamID, EscalationID: e.ID, ConsultationID: c.ID,
		RequestingAgent: c.RequestingAgent, ConsultedAgent: c.ConsultedAgent, Type: e.Type, Urgency: c.Urgency, CreatedAt: e.CreatedAt}); err != nil {
		s.log().ErrorContext(ctx, "publish ConsultationEscalated", "team_id", c.TeamID, "escalation_id", e.ID, "error", err.Error())
	}
}

// Escalations lists the team's escalations, open ones first, newest first
// within each. The page token belongs to the listing it came from.
func (s *Service) Escalations(ctx context.Context, teamID string, st EscalationStatus, p paging.Page) ([]Escalation, string, error) {
	p, err := p.Normalize()
	if err != nil {
		return nil, "", err
	}
	switch st {
	case EscalationOpen, EscalationResolved:
		return s.Store.ListEscalations(ctx, teamID, st, p)
	case "":
	default:
		return nil, "", apperr.Invalid("status", "status must be open or resolved")
	}
	// Both: open first. A token continues the resolved listing once the
	// open one is done ("r:" prefix), so paging stays correct.
	if strings.HasPrefix(p.Token, "r:") {
		list, next, err := s.Store.ListEscalations(ctx, teamID, EscalationResolved, paging.Page{Limit: p.Limit, Token: p.Token[2:]})
		if next != "" {
			next = "r:" + next
		}
		return list, next, err
	}
	open, next, err := s.Store.ListEscalations(ctx, teamID, EscalationOpen, p)
	if err != nil || next != "" {
		return open, next, err
	}
	if len(open) >= p.Limit {
		return open, "r:", nil
	}
	res, rnext, err := s.Store.ListEscalations(ctx, teamID, EscalationResolved, paging.Page{Limit: p.Limit - len(open)})
	if err != nil {
		return nil, "", err
	}
	if rnext != "" {
		rnext = "r:" + rnext
	}
	return append(open, res...), rnext, nil
}

// ResolveInput is POST /v1/escalations/{id}/resolve.
type ResolveInput struct {
	Answer     string `json:"answer"`
	ResolvedBy string `json:"resolved_by"`
	// Action acts on a task_overdue escalation's task: cancel or requeue
	// (empty: the note only). A consultation's escalation takes none.
	Action string `json:"action"`
}

// Resolve records a human's answer to an escalation: the escalation is
// resolved, the consultation completed with the answer, and the answer
// put in the requesting agent's inbox, in one transaction. A task's
// escalation is resolved by the task service instead (resolveTask).
// Returns EINVALID, ENOTFOUND, ECONFLICT (Resolved).
func (s *Service) Resolve(ctx context.Context, teamID, id string, in ResolveInput) (Escalation, error) {
	answer := strings.TrimSpace(in.Answer)
	if answer == "" || utf8.RuneCountInString(answer) > MaxAnswer {
		return Escalation{}, apperr.Invalid("answer", "answer must be 1 to %d characters", MaxAnswer)
	}
	if utf8.RuneCountInString(in.ResolvedBy) > 200 {
		return Escalation{}, apperr.Invalid("resolved_by", "resolved_by is longer than 200 characters")
	}
	if err := tasks.CheckResolution(answer, in.Action); err != nil {
		return Escalation{}, err
	}
	e, err := s.Store.GetEscalation(ctx, teamID, id)
	if err != nil {
		return Escalation{}, err
	}
	if e.Type == tasks.EscalationTypeOverdue {
		return s.resolveTask(ctx, e, in)
	}
	if in.Action != "" {
		return Escalation{}, apperr.Invalid("action", "action applies to task_overdue escalations only")
	}
	if e.Status != EscalationOpen {
		return Escalation{}, apperr.New(apperr.ECONFLICT, "escalation %s is already resolved", e.ID).WithReason("Resolved")
	}
	c, err := s.Store.GetConsultation(ctx, teamID, e.ConsultationID)
	if err != nil {
		return Escalation{}, err
	}
	now := s.Now.UTC()
	answer = Redact(answer, map[string]int{})
	msg := messaging.Message{ID: ids.New("amsg"), TeamID: teamID, From: "human", To: c.RequestingAgent, Channel: messaging.ChannelDirect,
		Type: "info_response", Content: clip.Clip(fmt.Sprintf("A human answered your escalated consultation %s (%q): %s", c.ID, clip.Clip(c.Question, 200), answer), messaging.MaxContent),
		Metadata: map[string]any{"consultation_id": c.ID, "escalation_id": e.ID}, CreatedAt: now}
	e.Status, e.Resolution, e.ResolvedBy, e.MessageID, e.ResolvedAt = EscalationResolved, answer, strings.TrimSpace(in.ResolvedBy), msg.ID, &now
	if e.ResolvedBy == "" {
		e.ResolvedBy = "human"
	}
	c.Status, c.Response, c.ResolvedBy, c.CompletedAt, c.UpdatedAt = Completed, &Answer{Answer: answer}, "human", &now, now
	c.Version++
	if err := s.Store.ResolveEscalation(ctx, e, c, msg); err != nil {
		return Escalation{}, changed(err)
	}
	return e, nil
}
