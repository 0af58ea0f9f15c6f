package tasktools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/consultations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/toolset"
)

var consultSpec = models.Tool{Name: toolset.ConsultSpecialist,
	Description: `Ask a specialist colleague a question; the orchestrator chooses who answers (your suggestion is only a hint), shares only a curated context with secrets removed, and returns the answer. Repeating a question, waiting on each other or too many open consultations escalate to a human. ` +
		`Ask: {"question", "context": {"current_task", "specific_concern", "attempted_approaches": [], "relevant_files": [], "error_messages": []}, "suggested_agent": slug, "urgency": "low|normal|high|critical"}. ` +
		`Follow up on your consultation: {"consultation_id", "message"}. Close it once answered (it holds one of your 3 consultation slots until then): {"consultation_id", "resolved": true, "rating": 1-5, "lessons_learned"}. Read it (a human's answer after an escalation): {"consultation_id"}.`}

// consultInput is a new question (no consultation_id), a follow-up
// (message), the outcome that closes it (resolved), or a read.
type consultInput struct {
	consultations.RequestInput
	ConsultationID string `json:"consultation_id"`
	Message        string `json:"message"`
	Resolved       bool   `json:"resolved"`
	Rating         int    `json:"rating"`
	LessonsLearned string `json:"lessons_learned"`
}

// consult runs a consultation with the caller as the requesting agent, or
// follows up on or closes one of the caller's, through the same service
// as the HTTP API. Closing matters: an answered consultation counts as
// active (a slot of the caller's 3, and a wait circular detection sees)
// until its outcome is recorded or it has been idle for
// consultations.IdleLimit. In a chat the specialist's answer must come
// before the turn's deadline: the call is bounded by it (a late answer
// escalates the consultation).
func (t *Tools) consult(ctx context.Context, c caller, input []byte) (result, error) {
	var in consultInput
	if err := json.Unmarshal(input, &in); err != nil {
		return text("invalid input: " + err.Error())
	}
	in.ConsultationID = strings.TrimSpace(in.ConsultationID)
	if !c.waitUntil.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, c.waitUntil.Add(-time.Second))
		defer cancel()
	}
	if in.ConsultationID == "" {
		if in.Message != "" || in.Resolved {
			return text("rejected: consultation_id is required to follow up on or close a consultation")
		}
		in.RequestingAgent = c.agent
		cons, err := t.Consultations.Request(ctx, c.teamID, in.RequestInput)
		if err != nil {
			return refused(err)
		}
		return text(consultSummary(cons))
	}
	if in.Message != "" && in.Resolved {
		return text("rejected: send a follow-up message or close the consultation (resolved), not both in one call")
	}
	// A rating or lessons without resolved, or a new question on an open
	// consultation, would otherwise be read as a plain read and dropped
	// without the agent knowing.
	if !in.Resolved && (in.Rating != 0 || in.LessonsLearned != "") {
		return text("rejected: rating and lessons_learned close a consultation: add \"resolved\": true")
	}
	if strings.TrimSpace(in.Question) != "" {
		return text("rejected: a question starts a new consultation: leave out consultation_id, or follow up on this one with message")
	}
	cons, err := t.Consultations.Get(ctx, c.teamID, in.ConsultationID)
	if err != nil {
		return refused(err)
	}
	if cons.RequestingAgent != c.agent {
		// Only the requester follows up on or rates its consultation.
		return text(fmt.Sprintf("rejected: consultation %s is not one you asked", cons.ID))
	}
	switch {
	case in.Message != "":
		cons, err = t.Consultations.Exchange(ctx, c.teamID, cons.ID, consultations.ExchangeInput{Message: in.Message})
	case in.Resolved:
		cons, err = t.Consultations.RecordOutcome(ctx, c.teamID, cons.ID, consultations.OutcomeInput{Rating: in.Rating, LessonsLearned: in.LessonsLearned})
	}
	if err != nil {
		return refused(err)
	}
	return text(consultSummary(cons))
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
		fmt.Fprintf(&b, ".\nAnswer: %s", c.Response.Answer)
		if c.Response.AdditionalContext != "" {
			fmt.Fprintf(&b, "\nAdditional context: %s", c.Response.AdditionalContext)
		}
		if c.Response.CodeReference != "" {
			fmt.Fprintf(&b, "\nCode reference: %s", c.Response.CodeReference)
		}
		if len(c.SuggestedNextSteps) > 0 {
			fmt.Fprintf(&b, "\nSuggested next steps: %s", strings.Join(c.SuggestedNextSteps, "; "))
		}
	}
	switch {
	case c.Outcome != nil:
		fmt.Fprintf(&b, "\nClosed with your rating %d.", c.Outcome.Rating)
	case c.Status == consultations.InProgress:
		fmt.Fprintf(&b, "\nFollow up with {\"consultation_id\": %q, \"message\"}; when you have what you need, close it with {\"consultation_id\": %q, \"resolved\": true, \"rating\": 1-5, \"lessons_learned\"}.", c.ID, c.ID)
	}
	return b.String()
}
