package workflow

import (
	"encoding/json"
	"slices"
	"time"
)

// The hard budgets of one task (the product's promises): the defaults of
// every task and the most a task may ask for.
const (
	MaxTaskTokens    = 4000
	MaxTaskToolCalls = 10
	MaxTaskSeconds   = 120
)

// Budgets limit one task. The delegation machine reads timeout_seconds as
// the worker state's TimeoutSecondsPath.
type Budgets struct {
	MaxTokens      int `json:"max_tokens"`
	MaxToolCalls   int `json:"max_tool_calls"`
	TimeoutSeconds int `json:"timeout_seconds"`
}

// TaskInput is the delegation machine's input, and what its RunTask state
// hands the worker.
type TaskInput struct {
	TeamID         string  `json:"team_id"`
	TaskID         string  `json:"task_id"`
	Assignee       string  `json:"assignee"`
	Title          string  `json:"title"`
	Instructions   string  `json:"instructions"`
	Context        string  `json:"context,omitempty"`
	ExpectedOutput string  `json:"expected_output,omitempty"`
	Budgets        Budgets `json:"budgets"`
	// ModelTier is the tier (tier_0, tier_1, tier_2) whose model the
	// worker asks when the agent names no model of its own; empty is the
	// provider's default.
	ModelTier string `json:"model_tier,omitempty"`
	// Report marks a task that delivers a report: the worker holds its
	// answer to the report's template (and asks for one revision).
	Report *ReportCheck `json:"report,omitempty"`
	// Resume continues an attempt that stopped to wait for a delegated
	// task (see TaskResult.Waiting); absent on the first run.
	Resume *Resume `json:"resume,omitempty"`
	// HeldCall is a chat reply's tool call that needed a human's approval
	// (docs/approvals.md): the task continues that reply. Its first
	// attempt asks no model: it waits for the decision on this call, as
	// if the model had just made it, and the resumed attempt runs it as
	// decided and lets the model finish the answer.
	HeldCall *ApprovalWait `json:"held_call,omitempty"`
	// ToolPacks are the tool packs (shared/tools/toolpacks) whose tools the
	// worker offers this task on top of its agent's own: for this task
	// only, never its sub-tasks.
	ToolPacks []string `json:"tool_packs,omitempty"`
	// RootTaskID is the root of the task's delegation tree (a plan): the
	// scope of its clipboard (the bridging tools).
	RootTaskID string `json:"root_task_id,omitempty"`
}

// ReportCheck is what the worker needs to hold a report task's answer to
// its template (shared/work/reports): the report, its type (the template), the
// format it must be written in and how many sections it may have.
type ReportCheck struct {
	ReportID    string `json:"report_id"`
	Type        string `json:"type"`
	Format      string `json:"format"`
	MaxSections int    `json:"max_sections"`
}

// Waiting is a worker that stopped to wait for the tasks it delegated in
// one model response (one, or several asked at once). The machine then
// waits for every child in its AwaitChildren state (a Map with one task
// token per child: no Lambda runs, nothing is billed) and runs the worker
// once, when the last child has ended, with Resume.
type Waiting struct {
	// ChildTaskIDs are the children waited for, in the order the model
	// called for them; the machine's Map iterates over them.
	ChildTaskIDs []string `json:"child_task_ids"`
	// ChildTaskID is the first of them, for an execution still running
	// the single-child definition (AwaitChild) when a new worker is
	// deployed: it waits for that one, and the worker answers the others'
	// calls with a pointer to check_task_status.
	ChildTaskID string `json:"child_task_id"`
	// State is the worker's own (its conversation with the model and its
	// usage so far); the machine carries it without reading it.
	State json.RawMessage `json:"state"`
	// TimeoutSeconds is what is left of the parent's own deadline: the
	// machine waits no longer for any child (the TimeoutSecondsPath of
	// each child's wait, all started at once).
	TimeoutSeconds int `json:"timeout_seconds"`
	// Approvals are the calls of the response that wait for a human
	// (approvals.go): set instead of the children, the machine blocks the
	// task and waits for every decision.
	Approvals []ApprovalWait `json:"approvals,omitempty"`
	// ApprovalIDs are the approvals' ids, for the block state's record.
	ApprovalIDs []string `json:"approval_ids,omitempty"`
	// Remote is a task whose assignee is an agent outside the team (an
	// A2A agent) that has not answered yet: set instead of the children,
	// the machine waits Remote.PollSeconds in a Wait state (nothing runs)
	// and runs the worker again with Resume.Remote, which reads the
	// remote task once, until it ends or the task's deadline passes.
	Remote *RemoteWait `json:"remote,omitempty"`
}

// RemoteWait is a remote agent's task being waited for.
type RemoteWait struct {
	TaskID string `json:"task_id"`
	// Polls is how many times it was read; PollSeconds the wait before
	// the next read (it grows with Polls, and never passes the deadline
	// by more than a second).
	Polls       int `json:"polls"`
	PollSeconds int `json:"poll_seconds"`
}

// Resume is what the resumed worker gets: its saved state and how each
// child ended.
type Resume struct {
	State json.RawMessage `json:"state"`
	// Children are the outcomes of every child waited for (the Map's
	// output, in ChildTaskIDs' order).
	Children []ChildOutcome `json:"children,omitempty"`
	// Child is the one outcome the single-child definition sends.
	Child ChildOutcome `json:"child,omitzero"`
	// Approvals are the decisions on the calls that waited for a human
	// (the AwaitApprovals Map's output, in Waiting.Approvals' order).
	Approvals []ApprovalOutcome `json:"approvals,omitempty"`
	// Remote is the remote task to read (Waiting.Remote).
	Remote *RemoteWait `json:"remote,omitempty"`
}

// Outcomes are the children's outcomes, whichever definition sent them.
func (r Resume) Outcomes() []ChildOutcome {
	if len(r.Children) > 0 || r.Child.TaskID == "" {
		return r.Children
	}
	return []ChildOutcome{r.Child}
}

// ChildOutcome is the output the task model sends a waiting parent's task
// token when the child ends.
type ChildOutcome struct {
	TaskID string `json:"task_id"`
	Status string `json:"status"`
	// Assignee is the child's agent: the parent fences the summary of one
	// outside the team (an A2A agent) as untrusted data.
	Assignee string `json:"assignee,omitempty"`
	// Summary is the delegated result (or failure) as the parent's tool
	// returns it to the model.
	Summary string `json:"summary"`
}

// TaskResult is what the worker returns and the machine's output.
type TaskResult struct {
	TaskID     string  `json:"task_id"`
	Output     string  `json:"output"`
	TokensUsed int     `json:"tokens_used"`
	ToolCalls  int     `json:"tool_calls"`
	CostUSD    float64 `json:"cost_usd"`
	ModelID    string  `json:"model_id"`
	// ResultArtifacts are the ids of what the task's tool calls created
	// while it ran (sub-tasks, reports, memories, messages, sessions,
	// consultations, clipboard entries), in the order they were made,
	// each once, at most MaxResultArtifacts (AppendArtifacts). The
	// complete step stores them as the task's result_artifacts.
	ResultArtifacts []string `json:"result_artifacts,omitempty"`
	// Waiting is set when the worker stopped to wait for the tasks it
	// delegated instead of finishing; the machine waits and resumes it.
	Waiting *Waiting `json:"waiting,omitempty"`
}

// MaxResultArtifacts bounds a task's result_artifacts as its
// input_artifacts are bounded (50): ten tool calls can make at most ten
// things, so the bound is reached only by a task resumed many times; the
// first ones made are kept, the later ones dropped (their ids stay on
// the task's timeline, in each call's tool_result event).
const MaxResultArtifacts = 50

// AppendArtifacts adds ids to list in order, skipping an empty id and one
// list already holds, and stops at MaxResultArtifacts.
func AppendArtifacts(list []string, ids ...string) []string {
	for _, id := range ids {
		if len(list) >= MaxResultArtifacts {
			break
		}
		if id != "" && !slices.Contains(list, id) {
			list = append(list, id)
		}
	}
	return list
}

// Lifecycle actions of the delegation machine's marking states.
const (
	ActionStart    = "start"
	ActionComplete = "complete"
	ActionFail     = "fail"
	// ActionAwait registers a task token of the execution on one child a
	// waiting worker delegated to (one per child, from the machine's Map);
	// the child's end sends it.
	ActionAwait = "await"
	// ActionRecheckWait answers a child's wait that reached the parent's
	// deadline: wait again (the parent is blocked while a task below it
	// waits for approval, or has a later deadline) or not (it timed out).
	ActionRecheckWait = "recheck_wait"
	// ActionResumeWaiting takes a parent whose children all ended back to
	// running if it was blocked while one of them waited for approval.
	ActionResumeWaiting = "resume_waiting"
)

// StepError is a caught error as Step Functions puts it at ResultPath.
type StepError struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

// LifecycleInput is what the delegation machine sends the task-lifecycle
// function at each of its marking states.
type LifecycleInput struct {
	Machine      string     `json:"machine"`
	Action       string     `json:"action"`
	TeamID       string     `json:"team_id"`
	TaskID       string     `json:"task_id"`
	ExecutionARN string     `json:"execution_arn"`
	Result       TaskResult `json:"result"`
	Error        StepError  `json:"error"`
	// ChildTaskID and TaskToken are ActionAwait's.
	ChildTaskID string `json:"child_task_id,omitempty"`
	TaskToken   string `json:"task_token,omitempty"`
	// ApprovalIDs are ActionBlockForApproval's: the approvals the task
	// waits for (recorded on its timeline).
	ApprovalIDs []string `json:"approval_ids,omitempty"`
}

// LifecycleOutput reports the task after the step.
type LifecycleOutput struct {
	TaskID   string     `json:"task_id"`
	Status   string     `json:"status"`
	Deadline *time.Time `json:"deadline,omitempty"`
	// WaitSeconds is ActionRecheckWait's answer: how long to wait for the
	// child again (0: the parent's deadline has passed).
	WaitSeconds int `json:"wait_seconds"`
}
