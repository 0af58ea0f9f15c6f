package workflow

import "encoding/json"

// The collaboration machines, one per session pattern (the machine's name
// is the pattern's). Each execution is named by its session id (resumed
// runs <id>-r<N>); every state calls the session-steps function.
const (
	SupervisorWorker = "supervisor_worker"
	Pipeline         = "pipeline"
	PeerReview       = "peer_review"
	Brainstorm       = "brainstorm"
	Consensus        = "consensus"
)

// SessionMachines lists the collaboration machines.
var SessionMachines = []string{SupervisorWorker, Pipeline, PeerReview, Brainstorm, Consensus}

// Actions of the session machines' states.
const (
	SessionBegin      = "begin"      // mark the session active; the first items
	SessionPlan       = "plan"       // the lead assigns a sub-goal to each worker
	SessionStage      = "stage"      // one agent's turn (a task of the task model)
	SessionDecide     = "decide"     // close a round: converge, go again, or stop at max_rounds
	SessionSynthesize = "synthesize" // the final output
	SessionAwait      = "await"      // wait for a human with the state's task token
	SessionAwaitSlot  = "await_slot" // a stage's agent is at its limit: wait in line for a slot with the state's task token
	SessionComplete   = "complete"   // completed (or failed when a human rejected)
	SessionFail       = "fail"       // failed, or timed_out when the deadline passed
	SessionDecisionOK = "approve"    // a human's decision that completes the session
	NextDone          = "done"       // SessionStepOutput.Next: converged
	NextAgain         = "again"      // another round
	NextMaxRounds     = "max_rounds" // the last round ended without convergence
)

// SessionStepInput is what a session machine's state sends the
// session-steps function. Stage states get one SessionItem's fields.
type SessionStepInput struct {
	Machine      string `json:"machine"`
	Action       string `json:"action"`
	TeamID       string `json:"team_id"`
	SessionID    string `json:"session_id"`
	Run          int    `json:"run"`
	ExecutionARN string `json:"execution_arn"`
	// Item is a Map state's item (the stage states pass it whole).
	Item      *SessionItem    `json:"item,omitempty"`
	TaskToken string          `json:"task_token,omitempty"`
	Error     StepError       `json:"error"`
	Decision  json.RawMessage `json:"decision,omitempty"`
	// Round is a decide state's round.
	Round int `json:"round,omitempty"`
}

// SessionItem is one stage of a Map state: who works on what.
type SessionItem struct {
	Agent   string `json:"agent,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Stage   int    `json:"stage,omitempty"`
	Round   int    `json:"round,omitempty"`
	SubGoal string `json:"sub_goal,omitempty"`
	// SecondsLeft is the session's time left, the stage state's
	// TimeoutSecondsPath.
	SecondsLeft int `json:"seconds_left,omitempty"`
}

// SessionStepOutput is a step's answer: the items of the next Map state,
// the round, what comes next after a decision, and the time left.
type SessionStepOutput struct {
	Items       []SessionItem `json:"items"`
	Round       int           `json:"round"`
	Next        string        `json:"next,omitempty"`
	SecondsLeft int           `json:"seconds_left"`
	Status      string        `json:"status"`
	// WaitSeconds is set by a turn of an agent outside the team (an A2A
	// agent) that has not answered yet: the machine waits that long in a
	// Wait state (nothing runs) and runs the turn's state again, which
	// reads the remote task once. 0 (always present: the machines'
	// Choice reads it) when the turn is done.
	WaitSeconds int `json:"wait_seconds"`
}
