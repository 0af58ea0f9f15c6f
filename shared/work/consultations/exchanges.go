package consultations

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/team/memory"
)

// ExchangeInput is a follow-up (POST /v1/consultations/{id}/exchanges).
type ExchangeInput struct {
	Message string `json:"message"`
}

// Exchange sends a follow-up of the requester to the specialist of a
// completed consultation the specialist answered, after the loop checks
// (a loop escalates it instead, taking no slot). The follow-up reopens it
// to in_progress, taking one of its requester's slots on the counter's
// condition in the same transaction, and the answer completes it again,
// giving the slot back. Returns EINVALID, ENOTFOUND, ECONFLICT (NotOpen:
// the consultation takes no follow-up; ConcurrencyLimit: its requester
// already has MaxActivePerAgent active consultations, and nothing
// changed; ConsultationChanged: another follow-up or the outcome came
// first).
func (s *Service) Exchange(ctx context.Context, teamID, id string, in ExchangeInput) (Consultation, error) {
	msg := strings.TrimSpace(in.Message)
	if msg == "" || utf8.RuneCountInString(msg) > MaxQuestion {
		return Consultation{}, apperr.Invalid("message", "message must be 1 to %d characters", MaxQuestion)
	}
	c, err := s.Store.GetConsultation(ctx, teamID, id)
	if err != nil {
		return Consultation{}, err
	}
	if err := followable(c); err != nil {
		return Consultation{}, err
	}
	msg = Redact(msg, c.ContextPackage.Redactions)
	history, err := s.history(ctx, teamID)
	if err != nil {
		return Consultation{}, err
	}
	now := s.Now.UTC()
	if loop := s.detect(c, history, msg, now); loop != nil {
		return s.escalate(ctx, c, *loop)
	}
	// Read before the reopen, so that a failed read leaves no
	// consultation holding a slot.
	team, err := s.Dir.TeamAgents(ctx, teamID)
	if err != nil {
		return Consultation{}, err
	}
	c.Status, c.CompletedAt, c.UpdatedAt = InProgress, nil, now
	c.Version++
	live, err := s.takeSlot(ctx, teamID, c.RequestingAgent, history, now, func() error {
		return s.Store.SaveConsultation(ctx, Save{Consultation: c, Acquire: MaxActivePerAgent})
	})
	if errors.Is(err, ErrActiveLimit) {
		return Consultation{}, apperr.Wrap(apperr.ECONFLICT, err, "%s already has %d active consultations; a follow-up reopens %s when one of them is answered",
			c.RequestingAgent, MaxActivePerAgent, c.ID).WithReason(ReasonActiveLimit).
			WithDetail("limit", MaxActivePerAgent).WithDetail("active_consultations", live)
	}
	if err != nil {
		return Consultation{}, changed(err)
	}
	return s.ask(ctx, c, "clarification", msg, team)
}

// followable returns the conflict that keeps c from taking a follow-up:
// only a completed consultation the specialist answered, not yet rated
// nor closed idle, takes one.
func followable(c Consultation) error {
	notOpen := func(why string) error {
		return apperr.New(apperr.ECONFLICT, "consultation %s is %s: %s", c.ID, c.Status, why).WithReason("NotOpen")
	}
	switch {
	case c.Status.Active():
		return notOpen("its answer is still being written; read it again (GET with wait) and follow up once it is completed")
	case c.Status == Escalated:
		return notOpen("it waits on a human; their answer arrives in the requester's inbox")
	case c.Outcome != nil:
		return notOpen("it has its outcome; ask a new question")
	case c.ClosedReason != "":
		return notOpen("it was closed idle; ask a new question")
	case c.ResolvedBy != ResolvedBySpecialist && c.ResolvedBy != ResolvedByRemote || c.Response == nil:
		return notOpen("a human answered it; ask a new question")
	}
	return nil
}

// OutcomeInput is POST /v1/consultations/{id}/outcome.
type OutcomeInput struct {
	Rating         int    `json:"rating"`
	LessonsLearned string `json:"lessons_learned"`
}

// RecordOutcome records the requester's rating of an answered
// consultation, once; lessons learned become a shared procedural memory
// of the requester (in the same transaction), which later context
// packages draw on. A rated consultation takes no more follow-ups. One
// rated while a follow-up is being answered (in_progress) is completed
// and gives its slot back in the same transaction; the follow-up's answer
// then finds it changed. Returns EINVALID, ENOTFOUND, ECONFLICT
// (NotAnswered, OutcomeRecorded, ConsultationChanged).
func (s *Service) RecordOutcome(ctx context.Context, teamID, id string, in OutcomeInput) (Consultation, error) {
	if in.Rating < 1 || in.Rating > 5 {
		return Consultation{}, apperr.Invalid("rating", "rating must be 1 to 5")
	}
	lessons := strings.TrimSpace(in.LessonsLearned)
	if utf8.RuneCountInString(lessons) > MaxLessons {
		return Consultation{}, apperr.Invalid("lessons_learned", "lessons_learned is longer than %d characters", MaxLessons)
	}
	c, err := s.Store.GetConsultation(ctx, teamID, id)
	if err != nil {
		return Consultation{}, err
	}
	switch {
	case c.Outcome != nil:
		return Consultation{}, apperr.New(apperr.ECONFLICT, "consultation %s already has its outcome", c.ID).WithReason("OutcomeRecorded")
	case c.Status != InProgress && c.Status != Completed:
		return Consultation{}, apperr.New(apperr.ECONFLICT, "consultation %s is %s: it has no answer to rate yet", c.ID, c.Status).WithReason("NotAnswered")
	case c.Response == nil:
		// Closed idle before the specialist ever answered (its request was
		// cut off after the create): there is nothing to rate, and a
		// rating would count as a specialist's success or failure.
		return Consultation{}, apperr.New(apperr.ECONFLICT, "consultation %s was closed without an answer: there is nothing to rate", c.ID).WithReason("NotAnswered")
	}
	now := s.Now.UTC()
	save := Save{Release: c.Status == InProgress}
	c.Outcome = &Outcome{Rating: in.Rating, LessonsLearned: Redact(lessons, map[string]int{}), RecordedAt: now}
	if c.Outcome.LessonsLearned != "" {
		content := clip.Clip(fmt.Sprintf("Consultation lesson (%s asked %s: %s): %s", c.RequestingAgent, c.ConsultedAgent, clip.Clip(c.Question, 300), c.Outcome.LessonsLearned), memory.MaxContent)
		m := memory.Memory{ID: ids.New("mem"), TeamID: teamID, Author: c.RequestingAgent, Type: "procedural", Visibility: memory.Shared,
			Content: content, Source: "consultation", CreatedAt: now}
		c.Outcome.MemoryID, save.Memory = m.ID, &m
	}
	if c.Status == InProgress {
		c.Status, c.CompletedAt = Completed, &now
	}
	c.UpdatedAt = now
	c.Version++
	save.Consultation = c
	if err := s.Store.SaveConsultation(ctx, save); err != nil {
		return Consultation{}, changed(err)
	}
	if save.Memory != nil {
		if err := s.Bus.Publish(ctx, memory.DetailType, memory.SharedEvent{TeamID: teamID, MemoryID: save.Memory.ID, Author: save.Memory.Author, Type: save.Memory.Type, CreatedAt: now}); err != nil {
			s.log().ErrorContext(ctx, "publish MemoryShared", "team_id", teamID, "memory_id", save.Memory.ID, "error", err.Error())
		}
	}
	return c, nil
}
