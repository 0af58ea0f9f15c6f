package workflow

import "time"

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
}

// TaskResult is what the worker returns and the machine's output.
type TaskResult struct {
	TaskID     string  `json:"task_id"`
	Output     string  `json:"output"`
	TokensUsed int     `json:"tokens_used"`
	ToolCalls  int     `json:"tool_calls"`
	CostUSD    float64 `json:"cost_usd"`
	ModelID    string  `json:"model_id"`
}

// Lifecycle actions of the delegation machine's marking states.
const (
	ActionStart    = "start"
	ActionComplete = "complete"
	ActionFail     = "fail"
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
}

// LifecycleOutput reports the task after the step.
type LifecycleOutput struct {
	TaskID   string     `json:"task_id"`
	Status   string     `json:"status"`
	Deadline *time.Time `json:"deadline,omitempty"`
}
