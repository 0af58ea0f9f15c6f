package plans

import (
	"context"
	"errors"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Status is a plan's state.
type Status string

// Plan statuses: running until every step ended; then completed (every
// step succeeded), partial (some did: the answer says what is missing) or
// failed (none did, or the machine failed); cancelled by a person.
const (
	Running   Status = "running"
	Completed Status = "completed"
	Partial   Status = "partial"
	Failed    Status = "failed"
	Cancelled Status = "cancelled"
)

// Terminal reports whether s never changes again.
func (s Status) Terminal() bool { return s != Running }

// Step statuses.
const (
	StepPending   = "pending"
	StepWaiting   = "waiting_for_slot"
	StepRunning   = "running"
	StepCompleted = "completed"
	StepFailed    = "failed"
	// StepSkipped: a step it depends on failed, so it never ran.
	StepSkipped = "skipped"
)

// StepState is a step of a stored plan: what it was asked and how it went.
type StepState struct {
	Step
	Agent string `json:"agent"`
	Skill string `json:"skill"`
	// Report is the report type of a report step (a report:<type>
	// target, or a skill of that kind): the step's task is the report's,
	// ReportID.
	Report      string     `json:"report,omitempty"`
	ReportID    string     `json:"report_id,omitempty"`
	Status      string     `json:"status"`
	TaskID      string     `json:"task_id,omitempty"`
	Output      string     `json:"output,omitempty"`
	Error       string     `json:"error,omitempty"`
	Tokens      int        `json:"tokens"`
	CostUSD     float64    `json:"cost_usd"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
}

// Plan is a compound message's execution: one root task of the lead and
// its steps, run by the plan machine, answered by the lead's synthesis in
// the conversation.
type Plan struct {
	TeamID         string      `json:"-"`
	ID             string      `json:"id"`
	ConversationID string      `json:"conversation_id,omitempty"`
	UserID         string      `json:"user_id,omitempty"`  // the person whose turn started it (a token's user, or the user a key acts for)
	TraceID        string      `json:"trace_id,omitempty"` // the trace of the turn that started it (its answer's X-Trace-Id)
	Lead           string      `json:"lead"`
	Message        string      `json:"message"`
	Reasoning      string      `json:"reasoning"`
	Trigger        string      `json:"trigger"`
	Status         Status      `json:"status"`
	Steps          []StepState `json:"steps"`
	RootTaskID     string      `json:"root_task_id"`
	ExecutionARN   string      `json:"execution_arn,omitempty"`
	Synthesis      string      `json:"synthesis,omitempty"`
	CostUSD        float64     `json:"cost_usd"`
	Error          string      `json:"error,omitempty"`
	Version        int         `json:"version"`
	CreatedAt      time.Time   `json:"created_at"`
	UpdatedAt      time.Time   `json:"updated_at"`
	CompletedAt    *time.Time  `json:"completed_at,omitempty"`
	// EventSeq is the last sequence number of the plan's stream
	// (streams.Plan): stored beside the plan as event_seq, set with every
	// change that writes events, under the change's version condition.
	EventSeq int64 `json:"-"`
	// Events are the events a write stores with the change, numbered up
	// to EventSeq (update and Start derive them: changeEvents). Not
	// stored on the plan, and empty on a plan read.
	Events []streams.Event `json:"-"`
}

// Step returns the state of step id (nil when the plan has none).
func (p *Plan) Step(id int) *StepState {
	for i := range p.Steps {
		if p.Steps[i].StepID == id {
			return &p.Steps[i]
		}
	}
	return nil
}

// Ready lists the steps that can start now: pending, with every step
// they depend on completed.
func (p Plan) Ready() []int {
	var out []int
	for _, s := range p.Steps {
		if s.Status != StepPending {
			continue
		}
		ok := true
		for _, d := range s.DependsOn {
			ok = ok && p.Step(d).Status == StepCompleted
		}
		if ok {
			out = append(out, s.StepID)
		}
	}
	return out
}

// Outcome is the status a plan ends with once no step can run: completed
// when every step completed, partial when some did, failed when none did.
func (p Plan) Outcome() Status {
	done := 0
	for _, s := range p.Steps {
		if s.Status == StepCompleted {
			done++
		}
	}
	switch done {
	case len(p.Steps):
		return Completed
	case 0:
		return Failed
	}
	return Partial
}

// ErrChanged is a plan write that lost to a concurrent one (its version
// moved); the service reads again.
var ErrChanged = errors.New("the plan changed")

// Due is a running plan's backstop: its machine's timeout from its
// creation, plus a grace for the machine to end it itself. A plan still
// running then (its machine was lost) is failed by the sweeper.
//
// A plan whose machine has not begun (no ExecutionARN: Start's
// StartExecution failed, or its outcome is unknown) is due StartGrace
// after its creation instead: the sweep then starts its execution, by the
// plan's id (Sweep).
func (p Plan) Due() time.Time {
	if p.ExecutionARN == "" && !p.Status.Terminal() && p.CreatedAt.Add(StartGrace).Before(p.backstop()) {
		return p.CreatedAt.Add(StartGrace)
	}
	return p.backstop()
}

func (p Plan) backstop() time.Time {
	return p.CreatedAt.Add(time.Duration(workflow.PlanMaxSeconds)*time.Second + SweepGrace)
}

// StartGrace is how long a plan may wait for its machine to begin before
// the sweep starts its execution (a plan starts within StartGrace and a
// sweep, the task-sweeper's minute).
const StartGrace = 20 * time.Second

// StartTimeout bounds Start's StartExecution: a plan starts in a chat
// turn, and a Step Functions that does not answer must not take the
// turn's time to commit its reply (the sweep starts the plan instead).
const StartTimeout = 5 * time.Second

// SweepGrace is how long past its backstop a plan may still be running
// before the sweeper fails it.
const SweepGrace = time.Minute

// Ref names a plan across teams (the sweeper's view).
type Ref struct{ TeamID, ID string }

// Store persists plans. PutPlan is conditioned on the stored version
// being p.Version-1 (ErrChanged otherwise). CreatePlan and PutPlan write
// p.Events, numbered up to p.EventSeq, on the plan's stream in the same
// write: all of them or, with the change refused, none.
type Store interface {
	// DuePlans lists running plans whose backstop (Due) is before
	// before, across teams, up to limit.
	DuePlans(ctx context.Context, before time.Time, limit int) ([]Ref, error)
	CreatePlan(ctx context.Context, p Plan) error
	GetPlan(ctx context.Context, teamID, id string) (Plan, error)
	PutPlan(ctx context.Context, p Plan) error
	// ListPlans lists the team's plans, newest first; with a userID,
	// that person's only (a filtered page may be short).
	ListPlans(ctx context.Context, teamID, userID string, pg paging.Page) ([]Plan, string, error)
}
