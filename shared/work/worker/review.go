package worker

import "github.com/conclave-ai/conclave/statemachines/workflow"

// Reviewer holds the answer of a task that must follow a template (a
// report: workflow.TaskInput.Report) to it. The worker asks it once the
// model has answered; a Revision makes the worker ask the agent, in the
// same conversation and inside the same budgets and deadline, for exactly
// what is missing, once. The second answer is merged into the first and is
// final whatever it holds: judging it is the caller's (the report's own
// validation), not a reason to keep the model talking.
type Reviewer interface {
	// Review returns what the answer lacks, or nil when it stands.
	Review(p workflow.TaskInput, answer string) *Revision
	// Merge folds the revised answer into the first one.
	Merge(p workflow.TaskInput, answer, revised string) string
}

// Revision is what a Reviewer asks of an answer that falls short.
type Revision struct {
	// Missing names the required parts absent or empty; Invalid those
	// present but malformed (for the task's timeline).
	Missing []string
	Invalid []string
	// Prompt is what the agent is told.
	Prompt string
}

// review is the revision state of one task's conversation; a resumed
// attempt carries it in its saved state, so the revision happens once.
type review struct {
	Revised bool   `json:"revised,omitempty"`
	First   string `json:"first_answer,omitempty"`
}

// reviewAnswer decides what to do with a final answer: ask for the one
// revision (returned), or the output to return (merged after a revision).
func (w *Worker) reviewAnswer(p workflow.TaskInput, rv *review, answer string) (*Revision, string) {
	if w.Reviewer == nil || p.Report == nil {
		return nil, answer
	}
	if rv.Revised {
		return nil, w.Reviewer.Merge(p, rv.First, answer)
	}
	rev := w.Reviewer.Review(p, answer)
	if rev == nil {
		return nil, answer
	}
	rv.Revised, rv.First = true, answer
	return rev, ""
}
