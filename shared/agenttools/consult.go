package agenttools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/team/prompts"
	"github.com/conclave-ai/conclave/shared/work/consultations"
	"github.com/conclave-ai/conclave/shared/work/worker"
)

const consultDescription = `Ask a specialist colleague a question; the orchestrator chooses who answers (your suggestion is only a hint) and shares only a curated context with secrets removed. ` +
	`The answer is this call's result, except in a chat reply when the result says the answer will be posted in this conversation: then the specialist answers later, so tell the user it is on its way. ` +
	`Repeating a question, waiting on each other or too many open consultations escalate to a human. ` +
	`Follow up with consultation_follow_up, close it with close_consultation once answered, read it with read_consultation.`

// consultContext is what the specialist is told of the asker's work
// (consultations.RequestContext, described for the model).
type consultContext struct {
	CurrentTask         string   `json:"current_task,omitempty" jsonschema:"what you are working on"`
	SpecificConcern     string   `json:"specific_concern,omitempty" jsonschema:"what exactly you need help with"`
	AttemptedApproaches []string `json:"attempted_approaches,omitempty" jsonschema:"what you tried already"`
	RelevantFiles       []string `json:"relevant_files,omitempty" jsonschema:"files the question is about"`
	ErrorMessages       []string `json:"error_messages,omitempty" jsonschema:"error messages you got"`
}

// consultInput asks a new question (consult_specialist).
type consultInput struct {
	Question       string         `json:"question" jsonschema:"the question"`
	Context        consultContext `json:"context,omitzero" jsonschema:"your situation, curated for the specialist (secrets are removed)"`
	SuggestedAgent string         `json:"suggested_agent,omitempty" jsonschema:"slug of a colleague you think fits (a hint only)"`
	Urgency        string         `json:"urgency,omitempty" jsonschema:"how urgent it is (default normal)"`
}

func (consultInput) constrain(c constraints) {
	c.length("question", 1, consultations.MaxQuestion)
	c.length("context.current_task", 0, consultations.MaxField)
	c.length("context.specific_concern", 0, consultations.MaxField)
	for _, list := range []string{"attempted_approaches", "relevant_files", "error_messages"} {
		c.items("context."+list, consultations.MaxListItems, consultations.MaxListItem)
	}
	c.slug("suggested_agent")
	c.enum("urgency", consultations.Urgencies...)
}

type consultationIDInput struct {
	ConsultationID string `json:"consultation_id" jsonschema:"the id of a consultation you asked (cons_…)"`
}

func (consultationIDInput) constrain(c constraints) { c.length("consultation_id", 1, maxID) }

type followUpInput struct {
	ConsultationID string `json:"consultation_id" jsonschema:"the id of a consultation you asked (cons_…)"`
	Message        string `json:"message" jsonschema:"your follow-up to the specialist"`
}

func (followUpInput) constrain(c constraints) {
	c.length("consultation_id", 1, maxID)
	c.length("message", 1, consultations.MaxQuestion)
}

type closeInput struct {
	ConsultationID string `json:"consultation_id" jsonschema:"the id of a consultation you asked (cons_…)"`
	Rating         int    `json:"rating" jsonschema:"how helpful the answer was, from 1 (not at all) to 5 (fully)"`
	LessonsLearned string `json:"lessons_learned,omitempty" jsonschema:"what the team should remember from it"`
}

func (closeInput) constrain(c constraints) {
	c.length("consultation_id", 1, maxID)
	c.between("rating", 1, 5)
	c.length("lessons_learned", 0, consultations.MaxLessons)
}

// consult runs a consultation with the caller as the requesting agent,
// through the same service as the HTTP API, without waiting for the
// specialist: its answer comes from a task of the specialist's
// (consultations.RequestInput.Async). Asked from a chat reply, the tool
// returns the consultation pending at once and the answer is posted into
// the conversation (result_of the consultation); asked from a task, the
// task waits for the specialist's task in its workflow (worker.WaitFor)
// and resumes with the answer as this call's result.
//
// That task is an executed delegation, so it follows task_delegation
// like every other door where tasks enter (seed 000; docs/api.md,
// "Feature flags"): with the flag off (collaboration on) no task is
// started, and the specialist answers within the call, as POST
// /v1/consultations does (one model call, bounded by a chat's wait; a
// late or failed answer escalates), which is how consultations worked
// before they were asynchronous.
func (t *Tools) consult(ctx context.Context, c caller, in consultInput) (result, error) {
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	async := t.Flags.On(settings.FlagTaskDelegation)
	cons, err := t.Consultations.Request(ctx, c.teamID, consultations.RequestInput{
		RequestingAgent: c.agent, Question: in.Question, SuggestedAgent: in.SuggestedAgent, Urgency: in.Urgency,
		// Asked from a chat reply: the conversation lists it among its
		// work ("" working on a task).
		ConversationID: c.conversationID,
		Context: consultations.RequestContext{CurrentTask: in.Context.CurrentTask, SpecificConcern: in.Context.SpecificConcern,
			AttemptedApproaches: in.Context.AttemptedApproaches, RelevantFiles: in.Context.RelevantFiles, ErrorMessages: in.Context.ErrorMessages},
		Async: async, ParentTaskID: c.taskID, Creator: c.requester(),
	})
	if err != nil {
		return refused(err)
	}
	worker.Produced(ctx, cons.ID)
	switch {
	case cons.TaskID == "" || !cons.Status.Active():
		// Escalated (a loop, a refused task) or replayed: nothing to wait for.
		return text(consultSummary(cons))
	case c.inChat():
		return result{text: fmt.Sprintf("consultation %s asked %s; the answer will be posted in this conversation when it comes (or read it with read_consultation). Tell the user.", cons.ID, cons.ConsultedAgent),
			pending: &conversations.WorkRef{Type: conversations.WorkConsultation, ID: cons.ID, Agent: cons.ConsultedAgent, Status: string(cons.Status)}}, nil
	case c.taskID != "":
		return result{}, worker.WaitFor{ChildTaskID: cons.TaskID}
	}
	return text(consultSummary(cons))
}

// bounded is ctx bounded by a chat's wait, if any.
func (c caller) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.waitUntil.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, c.waitUntil.Add(-time.Second))
}

// ownConsultation reads a consultation the caller asked: only the
// requester follows up on, rates or reads it here.
func (t *Tools) ownConsultation(ctx context.Context, c caller, id string) (consultations.Consultation, *result, error) {
	cons, err := t.Consultations.Get(ctx, c.teamID, strings.TrimSpace(id))
	if err != nil {
		res, err := refused(err)
		return cons, &res, err
	}
	if cons.RequestingAgent != c.agent {
		res := result{text: fmt.Sprintf("rejected: consultation %s is not one you asked", cons.ID)}
		return cons, &res, nil
	}
	return cons, nil, nil
}

// consultFollowUp sends the specialist another message
// (consultation_follow_up).
func (t *Tools) consultFollowUp(ctx context.Context, c caller, in followUpInput) (result, error) {
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	cons, res, err := t.ownConsultation(ctx, c, in.ConsultationID)
	if res != nil || err != nil {
		return deref(res), err
	}
	cons, err = t.Consultations.Exchange(ctx, c.teamID, cons.ID, consultations.ExchangeInput{Message: in.Message})
	if err != nil {
		return refused(err)
	}
	return text(consultSummary(cons))
}

// closeConsultation records the outcome (close_consultation): the rating
// and lessons learned (a shared memory later context packages draw on).
// An answered consultation is completed and holds no slot already; a
// rating ends its follow-ups.
func (t *Tools) closeConsultation(ctx context.Context, c caller, in closeInput) (result, error) {
	cons, res, err := t.ownConsultation(ctx, c, in.ConsultationID)
	if res != nil || err != nil {
		return deref(res), err
	}
	cons, err = t.Consultations.RecordOutcome(ctx, c.teamID, cons.ID, consultations.OutcomeInput{Rating: in.Rating, LessonsLearned: in.LessonsLearned})
	if err != nil {
		return refused(err)
	}
	return text(consultSummary(cons))
}

// readConsultation reads one (read_consultation): a human's answer after
// an escalation arrives here and in the inbox.
func (t *Tools) readConsultation(ctx context.Context, c caller, in consultationIDInput) (result, error) {
	cons, res, err := t.ownConsultation(ctx, c, in.ConsultationID)
	if res != nil || err != nil {
		return deref(res), err
	}
	return text(consultSummary(cons))
}

func deref(r *result) result {
	if r == nil {
		return result{}
	}
	return *r
}

// consultSummary is a consultation as the requesting agent reads it.
func consultSummary(c consultations.Consultation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "consultation %s with %s is %s", c.ID, c.ConsultedAgent, c.Status)
	switch {
	case c.Status == consultations.Escalated && c.Loop != nil:
		fmt.Fprintf(&b, ": escalated to a human (%s); their answer will arrive in your inbox. Do not ask again.", c.Loop.Type)
	case c.Response != nil:
		if c.ResolvedBy == "human" {
			b.WriteString(".\nA human answered")
		}
		var ans strings.Builder
		fmt.Fprintf(&ans, "Answer: %s", c.Response.Answer)
		if c.Response.AdditionalContext != "" {
			fmt.Fprintf(&ans, "\nAdditional context: %s", c.Response.AdditionalContext)
		}
		if c.Response.CodeReference != "" {
			fmt.Fprintf(&ans, "\nCode reference: %s", c.Response.CodeReference)
		}
		if len(c.SuggestedNextSteps) > 0 {
			fmt.Fprintf(&ans, "\nSuggested next steps: %s", strings.Join(c.SuggestedNextSteps, "; "))
		}
		text := ans.String()
		if c.ResolvedBy == consultations.ResolvedByRemote {
			// A specialist outside the team wrote it: data, never
			// instructions.
			text = prompts.RemoteOutput(c.ConsultedAgent, text)
		}
		b.WriteString(".\n" + text)
	}
	switch {
	case c.Outcome != nil:
		fmt.Fprintf(&b, "\nClosed with your rating %d.", c.Outcome.Rating)
	case c.Response != nil || c.Status == consultations.InProgress:
		fmt.Fprintf(&b, "\nFollow up with consultation_follow_up; when you have what you need, close it with close_consultation (consultation_id %q, your rating 1-5).", c.ID)
	}
	return b.String()
}
