package plans

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/streams"
)

// Detail types of a plan's events: published on the bus and stored on the
// plan's stream (streams.Plan), with the same details.
const (
	EventStarted       = "PlanStarted"
	EventStepCompleted = "PlanStepCompleted"
	EventCompleted     = "PlanCompleted"
)

// Event is the detail of PlanStarted, PlanStepCompleted and PlanCompleted.
type Event struct {
	TeamID         string  `json:"team_id"`
	PlanID         string  `json:"plan_id"`
	ConversationID string  `json:"conversation_id,omitempty"`
	Lead           string  `json:"lead"`
	Status         Status  `json:"status"`
	RootTaskID     string  `json:"root_task_id"`
	Steps          int     `json:"steps"`
	CostUSD        float64 `json:"cost_usd"`
	StepID         int     `json:"step_id,omitempty"`
	StepStatus     string  `json:"step_status,omitempty"`
	Agent          string  `json:"agent,omitempty"`
	TaskID         string  `json:"task_id,omitempty"`
	// Synthesis is the answer (PlanCompleted): the result-poster posts it
	// into the conversation, naming Agents (the steps' agents) as its
	// contributors.
	Synthesis string   `json:"synthesis,omitempty"`
	Agents    []string `json:"agents,omitempty"`
}

// eventOf is the detail of kind for p (and the step it tells of).
func eventOf(kind string, p Plan, step *StepState) Event {
	ev := Event{TeamID: p.TeamID, PlanID: p.ID, ConversationID: p.ConversationID, Lead: p.Lead, Status: p.Status,
		RootTaskID: p.RootTaskID, Steps: len(p.Steps), CostUSD: p.CostUSD}
	if step != nil {
		ev.StepID, ev.StepStatus, ev.Agent, ev.TaskID = step.StepID, step.Status, step.Agent, step.TaskID
	}
	if kind == EventCompleted {
		ev.Synthesis = completedSynthesis(p)
		for _, st := range p.Steps {
			if !slices.Contains(ev.Agents, st.Agent) {
				ev.Agents = append(ev.Agents, st.Agent)
			}
		}
	}
	return ev
}

// completedSynthesis is the answer an ended plan's PlanCompleted carries:
// the lead's synthesis, or why there is none. Cancel ends a plan with the
// error "cancelled by <who>", and a failed machine (fail, the sweep) with
// the error it failed with; a plan whose steps all failed ends (complete)
// without an error and with the synthesis that says so.
func completedSynthesis(p Plan) string {
	switch {
	case p.Status == Cancelled:
		return "The plan was " + p.Error + "."
	case p.Status == Failed && p.Error != "":
		return "The plan failed: " + p.Error
	}
	return p.Synthesis
}

// stepEnded reports whether a step's status is an end (PlanStepCompleted).
func stepEnded(status string) bool { return status == StepCompleted || status == StepFailed }

// changeEvents are the events the change from before to after tells of,
// in the order they happened: PlanStarted for a new plan (before is the
// zero Plan), PlanStepCompleted for each step it ended (completed or
// failed; the steps it skips are not announced), PlanCompleted when it
// ends the plan.
func changeEvents(before, after Plan, at time.Time) *streams.Batch {
	b := &streams.Batch{At: at}
	if before.ID == "" {
		b.Add(EventStarted, eventOf(EventStarted, after, nil))
	}
	for i := range after.Steps {
		st := &after.Steps[i]
		if was := before.Step(st.StepID); stepEnded(st.Status) && (was == nil || !stepEnded(was.Status)) {
			b.Add(EventStepCompleted, eventOf(EventStepCompleted, after, st))
		}
	}
	if after.Status.Terminal() && (before.ID == "" || !before.Status.Terminal()) {
		b.Add(EventCompleted, eventOf(EventCompleted, after, nil))
	}
	return b
}

// WithEvents sets on after the events of the change from before
// (changeEvents; before is the zero Plan for a new one), numbered after
// before's last, and after.EventSeq to the stream's new last number: what
// every write of a plan stores with it (update, Start). Exported for the
// stores' contract (shared/testkit/storetest).
func WithEvents(before Plan, after *Plan, at time.Time) (err error) {
	after.Events, after.EventSeq, err = changeEvents(before, *after, at).Numbered(before.EventSeq)
	return err
}

// announce publishes on the bus the events the write of p stored on its
// stream, with the same details; the change is committed, so a failed
// publish is logged, not undone.
func (s *Service) announce(ctx context.Context, p Plan) {
	if s.Bus == nil {
		return
	}
	for _, se := range p.Events {
		var ev Event
		if err := json.Unmarshal(se.Detail, &ev); err != nil {
			s.Log.ErrorContext(ctx, "decode "+se.Type, "plan_id", p.ID, "error", err.Error())
			continue
		}
		if err := s.Bus.Publish(ctx, se.Type, ev); err != nil {
			s.Log.ErrorContext(ctx, "publish "+se.Type, "plan_id", p.ID, "error", err.Error())
		}
	}
}
