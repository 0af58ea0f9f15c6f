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
	Description: `Ask a specialist colleague a question; the orchestrator chooses who answers (your suggestion is only a hint), shares only a curated context with secrets removed, and returns the answer. Repeating a question, waiting on each other or too many open consultations escalate to a human. Input: {"question", "context": {"current_task", "specific_concern", "attempted_approaches": [], "relevant_files": [], "error_messages": []}, "suggested_agent": slug, "urgency": "low|normal|high|critical"}`}

// consult runs a consultation with the caller as the requesting agent,
// through the same service as POST /v1/consultations. In a chat the
// specialist's answer must come before the turn's deadline: the call is
// bounded by it (a late answer escalates the consultation).
func (t *Tools) consult(ctx context.Context, c caller, input []byte) (result, error) {
	var in consultations.RequestInput
	if err := json.Unmarshal(input, &in); err != nil {
		return text("invalid input: " + err.Error())
	}
	in.RequestingAgent = c.agent
	if !c.waitUntil.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, c.waitUntil.Add(-time.Second))
		defer cancel()
	}
	cons, err := t.Consultations.Request(ctx, c.teamID, in)
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
	return b.String()
}
