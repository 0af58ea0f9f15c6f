package workflow

// The errors below are matched by name in statemachines/*.asl.json:
// aws-lambda-go reports a returned error's Go type name as its errorType,
// which Step Functions uses as the error name. A test reads every ASL file
// and fails when an ErrorEquals name has no type here, or when an error a
// function returns (Returns) is named by no state that calls it.

// BudgetExceeded stops a task at its token or tool-call limit. Retrying
// cannot help, so the machine does not retry it.
type BudgetExceeded struct{ Msg string }

func (e BudgetExceeded) Error() string { return e.Msg }

// InvalidTask is a payload that cannot run (unknown or inactive assignee,
// missing fields, an unknown action). Not retried either.
type InvalidTask struct{ Msg string }

func (e InvalidTask) Error() string { return e.Msg }

// ModelFailed is a model or provider failure; the machine retries it.
type ModelFailed struct{ Msg string }

func (e ModelFailed) Error() string { return e.Msg }

// TaskTimedOut is the task's own deadline passing inside the worker; the
// task ends timed_out, without retries.
type TaskTimedOut struct{ Msg string }

func (e TaskTimedOut) Error() string { return e.Msg }

// TaskNotRunnable means the task was canceled, reassigned or swept while
// the execution was under way; the execution ends without touching it.
type TaskNotRunnable struct{ Msg string }

func (e TaskNotRunnable) Error() string { return e.Msg }

// BudgetExhausted is a session's cost cap reached: the model call that
// would cross it was refused and no further call is made. Not retried.
type BudgetExhausted struct{ Msg string }

func (e BudgetExhausted) Error() string { return e.Msg }

// SessionNotRunnable means the session was cancelled or ended while the
// execution ran; the execution ends without touching it.
type SessionNotRunnable struct{ Msg string }

func (e SessionNotRunnable) Error() string { return e.Msg }

// ProtocolViolation is an agent that kept breaking the collaboration
// protocol after being told the rule it broke. Not retried.
type ProtocolViolation struct{ Msg string }

func (e ProtocolViolation) Error() string { return e.Msg }

// Errors lists every error type a workflow function returns on purpose,
// one value each (the test reads their type names).
var Errors = []error{BudgetExceeded{}, InvalidTask{}, ModelFailed{}, TaskTimedOut{}, TaskNotRunnable{},
	BudgetExhausted{}, SessionNotRunnable{}, ProtocolViolation{}, AgentBusy{}}

// Returns names, per manifest function a machine invokes, the errors it
// returns on purpose. Every one must be named by a Retry or Catch of each
// state that invokes the function.
var Returns = map[string][]string{
	"task-lifecycle": {"AgentBusy", "InvalidTask", "TaskNotRunnable"},
	"task-worker":    {"BudgetExceeded", "InvalidTask", "ModelFailed", "TaskTimedOut", "TaskNotRunnable"},
	"session-steps":  {"AgentBusy", "BudgetExhausted", "InvalidTask", "ModelFailed", "ProtocolViolation", "SessionNotRunnable", "TaskTimedOut"},
}
