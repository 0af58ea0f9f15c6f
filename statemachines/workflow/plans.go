package workflow

// PlanMachine runs a compound plan (shared/work/plans): begin (the plan's root
// task running), then rounds of the steps whose dependencies are done, in
// parallel (each a task of the task model, delegated from the root and
// waited for with a task token), until none is left; the lead's synthesis;
// complete. The execution is named by the plan id.
const PlanMachine = "plan"

// Plan machine actions (PlanStepInput.Action).
const (
	PlanBegin      = "begin"      // the root task running; the first round's steps
	PlanStartStep  = "start_step" // create and start one step's task (AgentBusy when its agent is full)
	PlanAwaitSlot  = "await_slot" // a step's agent is full: wait in line for a slot (task token)
	PlanAwaitStep  = "await_step" // wait for the step's task to end (task token)
	PlanEndStep    = "end_step"   // record the step's outcome
	PlanNext       = "next"       // the next round's steps, or none
	PlanSynthesize = "synthesize" // the lead's answer from the steps' results
	PlanComplete   = "complete"   // completed or partial (or failed when no step succeeded)
	PlanFail       = "fail"       // the machine failed: the plan and its root fail
)

// PlanStepInput is what the plan machine sends the plan-steps function.
type PlanStepInput struct {
	Machine      string        `json:"machine"`
	Action       string        `json:"action"`
	TeamID       string        `json:"team_id"`
	PlanID       string        `json:"plan_id"`
	ExecutionARN string        `json:"execution_arn"`
	StepID       int           `json:"step_id,omitempty"`
	TaskToken    string        `json:"task_token,omitempty"`
	Error        StepError     `json:"error"`
	Outcome      *ChildOutcome `json:"outcome,omitempty"`
}

// PlanStepOutput is a step's answer: the steps of the next round (empty
// when the plan is done), and the task a started step runs as.
type PlanStepOutput struct {
	Ready  []PlanItem `json:"ready"`
	More   bool       `json:"more"`
	TaskID string     `json:"task_id,omitempty"`
	Status string     `json:"status,omitempty"`
}

// PlanItem is one step of a round (a Map item).
type PlanItem struct {
	StepID int `json:"step_id"`
}

// PlanMaxSeconds bounds a plan's execution (the plan machine's timeout),
// above the longest path its states' own (caught) timeouts allow: 4
// rounds of a slot wait (600 s) and a step (150 s), a synthesis. A state's
// timeout ends the plan through MarkFailed; this one is the backstop.
const PlanMaxSeconds = 3600
