// Package results brings the outcome of work linked to a conversation
// back into it: when a task, a report or a collaboration session that was
// started from a conversation ends, its result (or why it failed) is
// posted there as a message of the agent that did the work, so the agent
// that delegated sees it on its next turn and a client long-polling the
// conversation's messages receives it. The result-poster function runs it
// on the bus's TaskStatusChanged, ReportFinished and SessionStatusChanged
// events (rule → SQS).
//
// Events may arrive late, twice or out of order, so the poster reads the
// work's current record rather than trusting the event, and posts each
// result exactly once: the message is written in one transaction with a
// marker keyed by the work (and, for a session, its run), created only if
// absent; a redelivered event finds the marker and posts nothing.
//
// A posted result moves the conversation on: its message_count and
// version go up in the same transaction, so the count stays true and a
// turn or handoff that read the conversation before retries its commit on
// the new version (they handle conversations.ErrChanged), rather than
// putting back a count that misses the result.
package results

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/clock"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/work/consultations"
	"github.com/conclave-ai/conclave/shared/work/plans"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// Work types (conversations.WorkRef.Type) and the strategy each posted
// message carries.
const (
	WorkTask    = "task"
	WorkReport  = "report"
	WorkSession = "session"
	WorkPlan    = "plan"
	// WorkConsultation is a consultation asked from a chat reply.
	WorkConsultation = "consultation"

	StrategyDelegated     = "delegated"
	StrategyReport        = "report"
	StrategyCollaboration = "collaboration"
	StrategyPlan          = "plan"
	StrategyConsultation  = "consultation"
)

// Store is what posting needs: the work's records and the conversation.
type Store interface {
	GetTask(ctx context.Context, teamID, id string) (tasks.Task, error)
	GetReport(ctx context.Context, teamID, id string) (reports.Report, error)
	GetSession(ctx context.Context, teamID, id string) (sessions.Session, error)
	// PostResult adds m to its conversation once per marker, in one
	// transaction: the marker (created only if absent), the message and
	// its event on the conversation's stream (ResultPosted), and the
	// conversation's message_count, version and event_seq (the
	// conversation must exist; the write is conditioned on the version it
	// read, so the event's number is the conversation's next). posted is false when the marker existed: the result was
	// posted before and nothing is written. ENOTFOUND when the
	// conversation does not exist.
	PostResult(ctx context.Context, teamID string, m conversations.Message, marker string) (posted bool, err error)
}

// Outcome is what handling one event did.
type Outcome string

// Outcomes.
const (
	Posted    Outcome = "posted"
	Duplicate Outcome = "already_posted"
	Skipped   Outcome = "skipped"
)

// Poster posts results into conversations.
type Poster struct {
	Store Store
	Log   *slog.Logger
	Now   clock.Func
}

func (p *Poster) log() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.Default()
}

// TaskEnded posts the result of a task that ended, when its result is
// delivered to its conversation (tasks.DeliverToConversation): not a
// report's task (the report is posted), not a session's stage, not a task
// a chat turn waits for (the turn's reply carries it), not a sub-task
// that only inherits its parent's conversation. An event that is not a
// task's end, or names no conversation, is skipped without a read.
func (p *Poster) TaskEnded(ctx context.Context, ev tasks.TaskStatusChanged) (Outcome, error) {
	if ev.ConsultationID != "" {
		return p.ConsultationEnded(ctx, ev)
	}
	if !ev.Status.Terminal() || ev.ConversationID == "" || ev.ReportID != "" {
		return Skipped, nil
	}
	t, err := p.Store.GetTask(ctx, ev.TeamID, ev.TaskID)
	if err != nil {
		return "", err
	}
	if !t.Status.Terminal() || t.ConversationID == "" || t.ResultDelivery != tasks.DeliverToConversation ||
		t.Report != nil || strings.HasPrefix(t.CreatedBy.ID, "session:") {
		return Skipped, nil
	}
	return p.postTask(ctx, t)
}

// postTask posts an ended task's result as its assignee's message, once
// (the task's id is the marker).
func (p *Poster) postTask(ctx context.Context, t tasks.Task) (Outcome, error) {
	m := p.message(t.ConversationID, t.Assignee, StrategyDelegated, taskContent(t),
		conversations.WorkRef{Type: WorkTask, ID: t.ID, Status: string(t.Status), Agent: t.Assignee})
	return p.post(ctx, t.TeamID, m, t.ID)
}

// PostUndelivered implements conversations.ResultPoster: a chat reply
// waited for this task and carried its result, but the turn did not store
// that reply, so the result is posted as TaskEnded would have (the same
// message and marker: never twice). Only a task that ended, is linked to
// a conversation and was waited for in a reply is posted; any other work
// posts itself or is not a conversation's. A task linked to another
// conversation than the turn's is not posted there (nor in its own: that
// conversation's turn did not wait for it); it is logged, since a caller
// that names the wrong conversation is a defect to see.
func (p *Poster) PostUndelivered(ctx context.Context, teamID, convID string, work conversations.WorkRef) error {
	if work.Type != WorkTask {
		return nil
	}
	t, err := p.Store.GetTask(ctx, teamID, work.ID)
	if err != nil {
		return err
	}
	if !t.Status.Terminal() || t.ConversationID == "" || t.ResultDelivery != tasks.DeliverInReply {
		return nil
	}
	if t.ConversationID != convID {
		p.log().ErrorContext(ctx, "a reply's result names another conversation: not posted", "team_id", teamID,
			"conversation_id", convID, "task_conversation_id", t.ConversationID, "work_id", t.ID)
		return nil
	}
	out, err := p.postTask(ctx, t)
	if err == nil && out == Posted {
		p.log().InfoContext(ctx, "result posted for a reply that was not stored", "team_id", teamID, "conversation_id", t.ConversationID, "work_id", t.ID)
	}
	return err
}

var _ conversations.ResultPoster = (*Poster)(nil)

// taskContent is a completed task's result, or what ended it.
func taskContent(t tasks.Task) string {
	if t.Status == tasks.Completed {
		if strings.TrimSpace(t.Result) != "" {
			return t.Result
		}
		return fmt.Sprintf("Task %s (%s) completed without output.", t.ID, t.Title)
	}
	return ended(fmt.Sprintf("Task %s (%s)", t.ID, t.Title), string(t.Status), t.Error)
}

// ConsultationEnded posts the answer of a consultation asked from a chat
// reply into its conversation, once (the consultation's id is the
// marker), when the specialist's task that answers it ends: the
// specialist's message result_of the consultation, or a note that it was
// escalated to a human. The answer is the task's result, read from the
// task rather than from the consultation, which the report-finalizer
// completes from the same event in its own time. A consultation asked
// from a task (its task has a parent) answers that task, not the
// conversation.
func (p *Poster) ConsultationEnded(ctx context.Context, ev tasks.TaskStatusChanged) (Outcome, error) {
	if !ev.Status.Terminal() || ev.ConversationID == "" {
		return Skipped, nil
	}
	t, err := p.Store.GetTask(ctx, ev.TeamID, ev.TaskID)
	if err != nil {
		return "", err
	}
	if !t.Status.Terminal() || t.ConversationID == "" || t.ConsultationID == "" || t.ParentID != "" {
		return Skipped, nil
	}
	status, content := string(consultations.Completed), consultations.AnswerText(t.Result)
	switch {
	case t.Status == tasks.Completed && strings.TrimSpace(content) == "":
		content = fmt.Sprintf("Consultation %s: the specialist answered nothing.", t.ConsultationID)
	case t.Status != tasks.Completed:
		status = string(consultations.Escalated)
		content = ended(fmt.Sprintf("The specialist's task %s for consultation %s", t.ID, t.ConsultationID), string(t.Status), t.Error) +
			" The consultation is escalated to a human."
	}
	m := p.message(t.ConversationID, t.Assignee, StrategyConsultation, content,
		conversations.WorkRef{Type: WorkConsultation, ID: t.ConsultationID, Status: status, Agent: t.Assignee})
	return p.post(ctx, t.TeamID, m, t.ConsultationID)
}

// ReportEnded posts a report requested from a conversation: the report
// itself, written as its format asks, or why it failed.
func (p *Poster) ReportEnded(ctx context.Context, ev reports.Finished) (Outcome, error) {
	if !ev.Status.Terminal() || ev.ConversationID == "" {
		return Skipped, nil
	}
	r, err := p.Store.GetReport(ctx, ev.TeamID, ev.ReportID)
	if err != nil {
		return "", err
	}
	if !r.Status.Terminal() || r.ConversationID == "" {
		return Skipped, nil
	}
	m := p.message(r.ConversationID, r.To, StrategyReport, reportContent(r),
		conversations.WorkRef{Type: WorkReport, ID: r.ID, Status: string(r.Status), Agent: r.To})
	return p.post(ctx, r.TeamID, m, r.ID)
}

func reportContent(r reports.Report) string {
	head := fmt.Sprintf("Report %s (%s): %s", r.ID, r.Type, r.Title)
	if r.Status == reports.Completed {
		return head + "\n\n" + strings.TrimSpace(reports.Render(r.Format, r.Sections))
	}
	why := r.Error
	if r.Reason != "" && r.Reason != reports.ReasonTaskEnded {
		why = r.Reason + ": " + why
	}
	return ended(head, string(r.Status), why)
}

// SessionEnded posts the outcome of a session started from a
// conversation: a completed session's final output as the lead's message
// naming its contributors, or a note of why it failed, timed out or was
// cancelled. Each run of a session posts its own end (a failed session
// may be resumed and complete); an event of a run that a resume has
// superseded finds the session running again and is skipped.
func (p *Poster) SessionEnded(ctx context.Context, ev sessions.SessionStatusChanged) (Outcome, error) {
	if !ev.Status.Terminal() || ev.ConversationID == "" {
		return Skipped, nil
	}
	s, err := p.Store.GetSession(ctx, ev.TeamID, ev.SessionID)
	if err != nil {
		return "", err
	}
	if !s.Status.Terminal() || s.ConversationID == "" {
		return Skipped, nil
	}
	content := s.FinalOutput
	if s.Status != sessions.Completed || strings.TrimSpace(content) == "" {
		why := s.StatusReason
		if s.Convergence != "" {
			why = strings.TrimPrefix(why+": "+s.Convergence, ": ")
		}
		content = ended(fmt.Sprintf("Session %s (%s: %s)", s.ID, s.Pattern, clip.Clip(s.Goal, 200)), string(s.Status), why)
	}
	m := p.message(s.ConversationID, s.Lead, StrategyCollaboration, content,
		conversations.WorkRef{Type: WorkSession, ID: s.ID, Status: string(s.Status), Agent: s.Lead})
	for _, part := range s.Participants {
		m.Contributors = append(m.Contributors, part.Agent)
	}
	return p.post(ctx, s.TeamID, m, fmt.Sprintf("%s#r%d", s.ID, s.Runs))
}

// PlanEnded posts a compound plan's answer into its conversation, as the
// lead's message naming the steps' agents (attributed like an ensemble
// reply), once per plan: the synthesis of a completed or partial plan, or
// why it failed or was cancelled. The event carries the answer, so nothing
// is read.
func (p *Poster) PlanEnded(ctx context.Context, ev plans.Event) (Outcome, error) {
	if !ev.Status.Terminal() || ev.ConversationID == "" {
		return Skipped, nil
	}
	content := ev.Synthesis
	if strings.TrimSpace(content) == "" {
		content = ended("Plan "+ev.PlanID, string(ev.Status), "")
	}
	m := p.message(ev.ConversationID, ev.Lead, StrategyPlan, content,
		conversations.WorkRef{Type: WorkPlan, ID: ev.PlanID, Status: string(ev.Status), Agent: ev.Lead})
	m.Contributors = append(m.Contributors, ev.Agents...)
	return p.post(ctx, ev.TeamID, m, ev.PlanID)
}

// ended says how work ended: "Task … failed: BudgetExceeded: …".
func ended(what, status, why string) string {
	verb := map[string]string{"failed": "failed", "timed_out": "timed out", "canceled": "was canceled", "cancelled": "was cancelled", "completed": "completed"}[status]
	if verb == "" {
		verb = "ended " + status
	}
	if strings.TrimSpace(why) == "" {
		return what + " " + verb + "."
	}
	return what + " " + verb + ": " + why
}

func (p *Poster) message(convID, agent, strategy, content string, ref conversations.WorkRef) conversations.Message {
	return conversations.Message{
		ID: ids.New("msg"), ConversationID: convID, Role: conversations.AuthorAssistant, Agent: agent,
		Content: clip.Clip(content, conversations.MaxContent), CreatedAt: p.Now.UTC(), Strategy: strategy, ResultOf: &ref,
	}
}

// post writes the message once per marker. A conversation that does not
// exist (a record older than the checks of conversation_id) has nowhere
// to take the result: logged and skipped, not retried.
func (p *Poster) post(ctx context.Context, teamID string, m conversations.Message, marker string) (Outcome, error) {
	posted, err := p.Store.PostResult(ctx, teamID, m, marker)
	switch {
	case apperr.Is(err, apperr.ENOTFOUND):
		p.log().WarnContext(ctx, "the work's conversation does not exist; nothing posted", "team_id", teamID, "conversation_id", m.ConversationID, "work", m.ResultOf.Type, "work_id", m.ResultOf.ID)
		return Skipped, nil
	case err != nil:
		return "", err
	case !posted:
		return Duplicate, nil
	}
	return Posted, nil
}
