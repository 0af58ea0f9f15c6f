package consultations

import (
	"context"
	"errors"
	"fmt"

	"github.com/conclave-ai/conclave/shared/platform/answerby"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// A consultation asked from a chat reply or a task does not wait for the
// specialist within the request: the specialist answers in a task of its
// own, executed through the delegation workflow like any delegation (its
// instructions the question, its context the curated package), and the
// consultation links that task (TaskID; the task links it back,
// tasks.Task.ConsultationID). The consultation stays pending, holding its
// requester's slot, until the task ends; SyncTask then records the answer
// (or escalates a failed task), as a report follows its task
// (shared/work/reports). Asked from a task, the specialist's task is the
// asking task's child, which its workflow waits for holding no Lambda;
// asked from a chat reply, the answer is posted into the conversation
// (shared/work/results).

// SpecialistTasks creates and reads the specialists' tasks
// (tasks.Service).
type SpecialistTasks interface {
	Create(ctx context.Context, teamID string, creator tasks.Creator, in tasks.CreateInput, executeByDefault bool) (tasks.Task, error)
	Get(ctx context.Context, teamID, id string) (tasks.Task, error)
}

// syncAttempts bounds re-reads when the consultation changed between our
// read and our write (another delivery of an event of the same task).
const syncAttempts = 5

// specialistToolCalls bounds the tool calls of a specialist's task: an
// answer, not a project.
const specialistToolCalls = 10

// priorities maps a consultation's urgency to its task's priority.
var priorities = map[string]string{"low": "low", "normal": "normal", "high": "high", "critical": "urgent"}

// delegate creates the specialist's task of the recorded, pending
// consultation c and links it. A task the task service refuses (the
// specialist is in the asking task's chain, the delegation budget is
// spent, …) escalates the consultation, giving its slot back, as a failed
// specialist does.
func (s *Service) delegate(ctx context.Context, c Consultation, in RequestInput) (Consultation, error) {
	if s.Specialists == nil {
		return Consultation{}, errors.New("consultations: no task service for an asynchronous consultation")
	}
	b := brief(c)
	execute := true
	toolCalls := specialistToolCalls
	t, err := s.Specialists.Create(ctx, c.TeamID, in.Creator, tasks.CreateInput{
		Assignee: c.ConsultedAgent, CreatedByAgent: c.RequestingAgent, ParentID: in.ParentTaskID, ConversationID: c.ConversationID,
		Title: clip.Clip(b.Title, 500), Instructions: c.Question, Context: clip.Clip(b.Context, 20000), ExpectedOutput: b.ExpectedOutput,
		Priority: priorities[c.Urgency], Execute: &execute, Budgets: &tasks.BudgetsInput{MaxToolCalls: &toolCalls},
		ConsultationID: c.ID,
	}, true)
	now := s.Now.UTC()
	wctx, cancel := answerby.Detached(ctx, writeTimeout)
	defer cancel()
	if err != nil {
		if _, ok := apperr.As(err); !ok {
			return Consultation{}, err
		}
		s.log().WarnContext(ctx, "the specialist's task was refused", "team_id", c.TeamID, "consultation_id", c.ID, "agent", c.ConsultedAgent, "error", err.Error())
		return s.escalate(wctx, c, Loop{Type: EscalSpecialistError, DetectedAt: now, Evidence: map[string]any{
			"agent": c.ConsultedAgent, "description": "the specialist's task was refused: " + clip.Clip(err.Error(), 300)}})
	}
	c.TaskID, c.UpdatedAt = t.ID, now
	c.Version++
	if err := s.Store.SaveConsultation(wctx, Save{Consultation: c}); err != nil {
		// The task runs and links the consultation; SyncTask reads the
		// consultation again, so the answer is still recorded.
		return Consultation{}, changed(err)
	}
	return c, nil
}

// SyncTask records the end of the specialist's task of consultation id:
// a completed task's result is the answer (the exchange, its tokens and
// cost, the consultation completed and its slot given back in one
// transaction, as an answer within the request is); a failed, timed-out
// or canceled task escalates it (specialist_failed), giving the slot back
// too. It reads the consultation and the task rather than trusting the
// event, so events arriving late or twice change nothing: a consultation
// that is no longer active is left as it is. Returns the consultation.
func (s *Service) SyncTask(ctx context.Context, teamID, id string) (Consultation, error) {
	for range syncAttempts {
		c, err := s.Store.GetConsultation(ctx, teamID, id)
		if err != nil || !c.Status.Active() || c.TaskID == "" || len(c.Exchanges) > 0 {
			return c, err
		}
		t, err := s.Specialists.Get(ctx, teamID, c.TaskID)
		if err != nil || !t.Status.Terminal() {
			return c, err
		}
		next, err := s.settle(ctx, c, t)
		if errors.Is(err, ErrChanged) || apperr.Is(err, apperr.ECONFLICT) {
			continue
		}
		return next, err
	}
	return Consultation{}, fmt.Errorf("consultation %s kept changing while it was synced", id)
}

// settle records the ended task t's outcome on the active consultation c.
func (s *Service) settle(ctx context.Context, c Consultation, t tasks.Task) (Consultation, error) {
	now := s.Now.UTC()
	if t.Status != tasks.Completed {
		return s.escalate(ctx, c, Loop{Type: EscalSpecialistError, DetectedAt: now, Evidence: map[string]any{
			"agent": c.ConsultedAgent, "exchange": 1, "task_id": t.ID,
			"description": fmt.Sprintf("the specialist's task ended %s: %s", t.Status, clip.Clip(t.Error, 300))}})
	}
	reply := parseReply(t.Result)
	var ms int64
	if t.StartedAt != nil && t.CompletedAt != nil {
		ms = t.CompletedAt.Sub(*t.StartedAt).Milliseconds()
	}
	c.Exchanges = append(c.Exchanges, Exchange{Number: 1, Type: "question", From: c.RequestingAgent, To: c.ConsultedAgent,
		Message: c.Question, Response: reply.Answer, TokensUsed: t.TokensUsed, CostUSD: t.CostUSD, ResponseMS: ms, CreatedAt: now})
	c.Response = &Answer{Answer: reply.Answer, AdditionalContext: reply.AdditionalContext, CodeReference: reply.CodeReference}
	c.SuggestedNextSteps = reply.SuggestedNextSteps
	c.TokensUsed += t.TokensUsed
	c.CostUSD += t.CostUSD
	by := ResolvedBySpecialist
	if a, err := s.specialist(ctx, c); err == nil && a {
		by = ResolvedByRemote
	}
	c.Status, c.ResolvedBy, c.UpdatedAt, c.CompletedAt = Completed, by, now, &now
	c.Version++
	if err := s.Store.SaveConsultation(ctx, Save{Consultation: c, Release: true}); err != nil {
		return Consultation{}, err
	}
	return c, nil
}

// specialist reports whether c's specialist is outside the team (an A2A
// agent), whose answer the requester reads as untrusted data.
func (s *Service) specialist(ctx context.Context, c Consultation) (remote bool, err error) {
	if s.Dir == nil {
		return false, nil
	}
	team, err := s.Dir.TeamAgents(ctx, c.TeamID)
	if err != nil {
		return false, err
	}
	for _, a := range team {
		if a.Slug == c.ConsultedAgent {
			return a.IsRemote(), nil
		}
	}
	return false, nil
}

// AnswerText is the answer a specialist's task produced (its result, in
// the JSON the specialist is asked for or plain text), as the requester
// reads it.
func AnswerText(result string) string {
	r := parseReply(result)
	text := r.Answer
	if r.AdditionalContext != "" {
		text += "\n\nAdditional context: " + r.AdditionalContext
	}
	if r.CodeReference != "" {
		text += "\n\nCode reference: " + r.CodeReference
	}
	for i, step := range r.SuggestedNextSteps {
		if i == 0 {
			text += "\n\nSuggested next steps:"
		}
		text += "\n- " + step
	}
	return text
}

// ConcernsTask reports whether a task's status change may settle a
// consultation: the task answers one and has ended.
func ConcernsTask(ev tasks.TaskStatusChanged) bool {
	return ev.ConsultationID != "" && ev.Status.Terminal()
}
