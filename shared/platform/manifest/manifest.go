// Package manifest is the single list of Conclave's functions, their triggers
// and settings, and the managed resources they use (architecture decision 1).
// The CDK app (infra/) builds Lambda functions, routes, queues, rules, state
// machines and permissions from it; the local cloud (localstack/) registers
// the same handlers and provisions the same resources from it. Tests fail when
// a functions/ directory, the handler registry or the OpenAPI document
// disagrees with it.
//
// The manifest is plain data and imports nothing but the standard library so
// the CDK app can read it without pulling in the runtime.
package manifest

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Trigger says how a function is invoked.
type Trigger string

// Triggers.
const (
	TriggerHTTP Trigger = "http" // API Gateway HTTP API routes
	// TriggerStream: routes of the streaming API, a REST API whose Lambda
	// proxy integrations stream (responseTransferMode STREAM): the HTTP
	// API cannot stream (architecture decision 10).
	TriggerStream       Trigger = "stream"
	TriggerAuthorizer   Trigger = "authorizer"    // the HTTP API's Lambda authorizer
	TriggerSQS          Trigger = "sqs"           // an SQS event source mapping
	TriggerStepFunction Trigger = "stepfunctions" // a Task state of a state machine
	TriggerInvoke       Trigger = "invoke"        // direct invocation (admin tooling)
	TriggerSchedule     Trigger = "schedule"      // an EventBridge schedule (rate)
)

// Grant is one IAM action a function's code calls. The CDK app grants it
// on exactly the resources the constant names, and nothing else: no
// managed policy, no CDK Grant* bundle (GrantReadWriteData also allows
// Scan, BatchWriteItem and the stream reads). infra/grants reads each
// function's code and fails when its grants and its calls differ either
// way.
type Grant string

// Grants on the single table (its ARN; GrantQuery on the indexes of
// Function.Indexes too).
const (
	GrantGetItem    Grant = "dynamodb:GetItem"
	GrantPutItem    Grant = "dynamodb:PutItem"
	GrantUpdateItem Grant = "dynamodb:UpdateItem"
	GrantDeleteItem Grant = "dynamodb:DeleteItem"
	GrantQuery      Grant = "dynamodb:Query"
	// GrantBatchGetItem reads up to 100 items by key in one call (the
	// conversations an agent took part in, found on an index).
	GrantBatchGetItem Grant = "dynamodb:BatchGetItem"
	// GrantConditionCheckItem authorizes the condition checks of a
	// TransactWriteItems; its puts, updates and deletes are authorized as
	// PutItem, UpdateItem and DeleteItem (TransactWriteItems is no action).
	GrantConditionCheckItem Grant = "dynamodb:ConditionCheckItem"
	GrantDescribeTable      Grant = "dynamodb:DescribeTable"
)

// Grants on the other resources.
const (
	// GrantBusPut publishes on the bus.
	GrantBusPut           Grant = "events:PutEvents"
	GrantDescribeEventBus Grant = "events:DescribeEventBus"
	// GrantStartExecution starts executions of the state machines.
	GrantStartExecution Grant = "states:StartExecution"
	// GrantStopExecution stops their executions.
	GrantStopExecution Grant = "states:StopExecution"
	// GrantCallback completes the task tokens of the machines' waiting
	// states: every function that can end a task wakes the parent
	// execution waiting for it.
	GrantCallback             Grant = "states:SendTaskSuccess"
	GrantDescribeStateMachine Grant = "states:DescribeStateMachine"
	// GrantModels calls the stage's foundation models on Amazon Bedrock
	// (Converse is authorized as InvokeModel).
	GrantModels Grant = "bedrock:InvokeModel"
	// GrantModelsStream streams their answers (ConverseStream, a call that
	// asks for the reply's text as it is written, is authorized as
	// InvokeModelWithResponseStream), on the same models as GrantModels:
	// every function that converses with the models (the Bedrock adapter's
	// Converse) links both calls.
	GrantModelsStream Grant = "bedrock:InvokeModelWithResponseStream"
	// GrantDeadLetter sends to the dead-letter queue of the function's
	// trigger queue, and no other: the consumer dead-letters a message
	// itself once its processing attempts are used up (consumers.Retry).
	GrantDeadLetter Grant = "sqs:SendMessage"
	// GrantGetQueueAttributes reads the attributes of every queue (the
	// health function's probe).
	GrantGetQueueAttributes Grant = "sqs:GetQueueAttributes"
	// The MCP packs' credentials in Secrets Manager, on the stage's
	// prefix alone (SecretsPrefix): read by whoever calls a pack's
	// server, written by whoever registers one.
	GrantGetSecret    Grant = "secretsmanager:GetSecretValue"
	GrantCreateSecret Grant = "secretsmanager:CreateSecret"
	GrantPutSecret    Grant = "secretsmanager:PutSecretValue"
	GrantDeleteSecret Grant = "secretsmanager:DeleteSecret"
)

// SecretsPrefix is the name prefix of a stage's secrets (the MCP packs'
// credentials: SecretsPrefix(stage) + team + "/" + pack), the only
// secrets the Secrets Manager grants reach.
func SecretsPrefix(stage string) string { return "conclave/" + stage + "/mcp/" }

// A2ASecretsPrefix names the stage's secrets of external A2A agents'
// credentials (agents.Service.SecretPrefix).
func A2ASecretsPrefix(stage string) string { return "conclave/" + stage + "/a2a/" }

// SecretsRoot is the prefix of every secret of the stage (the MCP packs'
// and the A2A agents'): what the CDK app grants.
func SecretsRoot(stage string) string { return "conclave/" + stage + "/" }

// ActionInvokeFunction is the action Function.Invokes grants on each
// function it names.
const ActionInvokeFunction = "lambda:InvokeFunction"

// knownGrants are the grants the CDK app knows how to scope.
var knownGrants = map[Grant]bool{
	GrantGetItem: true, GrantPutItem: true, GrantUpdateItem: true, GrantDeleteItem: true, GrantQuery: true, GrantBatchGetItem: true,
	GrantConditionCheckItem: true, GrantDescribeTable: true, GrantBusPut: true, GrantDescribeEventBus: true,
	GrantStartExecution: true, GrantStopExecution: true, GrantDescribeExecution: true, GrantCallback: true, GrantDescribeStateMachine: true,
	GrantModels: true, GrantModelsStream: true, GrantDeadLetter: true, GrantGetQueueAttributes: true,
	GrantGetSecret: true, GrantCreateSecret: true, GrantPutSecret: true, GrantDeleteSecret: true, GrantPutSpans: true,
}

// Service is the IAM service prefix of g ("dynamodb").
func (g Grant) Service() string {
	svc, _, _ := strings.Cut(string(g), ":")
	return svc
}

// Actions returns the IAM actions f is granted, sorted: its grants and,
// when it invokes functions, lambda:InvokeFunction.
func (f Function) Actions() []string {
	set := map[string]bool{}
	for _, g := range f.Grants {
		set[string(g)] = true
	}
	if len(f.Invokes) > 0 {
		set[ActionInvokeFunction] = true
	}
	out := make([]string, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// clientOf maps an IAM service prefix to the SDK client that calls it.
var clientOf = map[string]string{
	"dynamodb": "dynamodb", "events": "eventbridge", "states": "sfn",
	"bedrock": "bedrockruntime", "sqs": "sqs", "lambda": "lambda",
	"secretsmanager": "secretsmanager",
}

// Clients returns the AWS SDK service clients (the last element of
// github.com/aws/aws-sdk-go-v2/service/<client>) a function with grants
// and invokes may link. A function links no other client (a test compares
// this with `go list -deps` of every function). An action no client calls
// (GrantPutSpans: the span export is a signed HTTP POST) adds none.
func (f Function) Clients() []string {
	set := map[string]bool{}
	for _, a := range f.Actions() {
		svc, _, _ := strings.Cut(a, ":")
		if c, ok := clientOf[svc]; ok {
			set[c] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// Route is one HTTP API route. Path uses API Gateway's {param} syntax.
type Route struct {
	Method string
	Path   string
}

// Key is the API Gateway route key ("GET /v1/agents/{slug}").
func (r Route) Key() string { return r.Method + " " + r.Path }

// Function is one Lambda function: its directory under functions/ is Name.
type Function struct {
	Name        string
	Description string
	Trigger     Trigger
	Routes      []Route // TriggerHTTP and TriggerStream
	// Public routes are not authorized by the gateway: the function
	// checks the key itself, or needs none (the A2A agent card), so that
	// every answer is its own (A2A wants JSON-RPC errors, never the
	// gateway's bare 401 or 403). Its routes still have the stage's
	// throttling and access log.
	Public    bool
	Queue     string // TriggerSQS: the queue it consumes
	BatchSize int    // TriggerSQS
	// EveryMinutes is the schedule of a TriggerSchedule function.
	EveryMinutes int
	MemoryMB     int
	Timeout      int // seconds
	// Grants are the IAM actions the function's code calls, each once
	// (infra/grants checks them against the code; its failure message
	// prints the line to write).
	Grants []Grant
	// Indexes are the table's indexes the function queries: GrantQuery
	// is granted on them too (on the table alone otherwise).
	Indexes []string
	// Invokes lists the functions this one calls synchronously (Lambda
	// Invoke); the CDK grants exactly those and passes their names.
	Invokes []string
	// Domains are the domain packages (shared/<domain>) the function
	// serves, and so links: its stores, services and handlers. A
	// transaction that crosses domains (a result posted into a
	// conversation) names each. infra/grants checks the list against what
	// the function's main package links (go list -deps). Every HTTP
	// function serves teams: its requests carry the team the authorizer
	// resolved (shared/platform/httpapi reads shared/team/authorizer's context keys).
	Domains []string
}

// Queue is an SQS queue; every queue has a dead-letter queue named Name+"-dlq"
// unless it is itself a dead-letter queue.
type Queue struct {
	Name string
	// MaxAttempts 3 is the product's "2 retries then DLQ": one delivery and
	// two retries that ran and failed, counted by the consumer, which then
	// moves the message to the dead-letter queue itself.
	MaxAttempts int
	// MaxReceiveCount is the queue's redrive ceiling, counted by SQS in
	// receives: a throttled batch spends a receive without running, so it is
	// well above MaxAttempts; it dead-letters only a message that crashes or
	// times out its consumer every time (which records no attempt).
	MaxReceiveCount int
	// VisibilityTimeout (seconds) is at least six times the consumer's
	// timeout, as AWS asks for queues that trigger Lambda: the event source
	// mapping may retry a throttled batch within that time without the
	// message reappearing and being received again.
	VisibilityTimeout int
	// DeadLetterOnly marks queues that only receive failed payloads (from a
	// state machine's Catch); they have no DLQ of their own.
	DeadLetterOnly bool
}

// EventDeliveryDLQ is the queue of events EventBridge could not deliver to
// their targets.
const EventDeliveryDLQ = "event-delivery-dlq"

// DLQName is the name of q's dead-letter queue.
func (q Queue) DLQName() string { return q.Name + "-dlq" }

// Rule routes events from the bus to a queue.
type Rule struct {
	Name        string
	Sources     []string
	DetailTypes []string // empty: every detail type
	// DetailPresent are fields of the detail an event must have to match
	// (an "exists" filter on each). A consumer that skips every event
	// without such a field says so here, and the bus never queues those
	// events: no message, no invocation, no backlog in front of the events
	// that matter (the result-poster's queue carried every task transition
	// of every team, while it posts only those linked to a conversation).
	DetailPresent []string
	Queue         string
}

// Pattern is the rule's EventBridge event pattern.
func (r Rule) Pattern() map[string]any {
	p := map[string]any{"source": r.Sources}
	if len(r.DetailTypes) > 0 {
		p["detail-type"] = r.DetailTypes
	}
	if len(r.DetailPresent) > 0 {
		detail := map[string]any{}
		for _, f := range r.DetailPresent {
			detail[f] = []any{map[string]any{"exists": true}}
		}
		p["detail"] = detail
	}
	return p
}

// StateMachine is one ASL file in statemachines/ with the substitutions its
// definition needs. Substitution values name resources in this manifest:
// "function:<name>", "queue:<name>" (URL), "bus", "table".
type StateMachine struct {
	Name          string
	File          string
	Substitutions map[string]string
	// Timeout caps a whole execution (seconds); task states carry their own.
	Timeout int
}

// Table describes the single table.
type Table struct {
	PartitionKey string
	SortKey      string
	GSIs         []GSI
	TTLAttribute string
}

// GSI is a global secondary index with string keys and all attributes.
type GSI struct {
	Name         string
	PartitionKey string
	SortKey      string
}

// EventSource is the source of every event Conclave publishes.
const EventSource = "conclave"

// BudgetWarningLog is the message (slog "msg") of the log line the
// CostGuard writes when it publishes TeamBudgetWarning: each stage's
// functions that call models count these lines with a metric filter, and
// the stage's team-budget-warnings alarm watches that metric
// (infra/stack/monitoring.go). A log line rather than the event's rule
// metric: it is counted in the very function that emitted the warning,
// without a rule that delivers nowhere.
const BudgetWarningLog = "team budget warning emitted"

// BudgetWarningMetric is that metric, in namespace MetricNamespace.
const BudgetWarningMetric = "TeamBudgetWarnings"

// MetricNamespace is the CloudWatch namespace of Conclave's own metrics.
const MetricNamespace = "Conclave"

// The resources.
var (
	MainTable = Table{
		PartitionKey: "pk",
		SortKey:      "sk",
		GSIs: []GSI{
			{Name: "gsi1", PartitionKey: "gsi1pk", SortKey: "gsi1sk"},
			{Name: "gsi2", PartitionKey: "gsi2pk", SortKey: "gsi2sk"},
			{Name: "gsi3", PartitionKey: "gsi3pk", SortKey: "gsi3sk"},
			// What a conversation started (CONVWORK#) and the
			// conversations an agent took part in (CONVAGENT#): a
			// CloudFormation update adds one GSI at a time, so a stage
			// takes gsi4 in a deploy of its own.
			{Name: "gsi4", PartitionKey: "gsi4pk", SortKey: "gsi4sk"},
		},
		TTLAttribute: "expires_at",
	}

	Queues = []Queue{
		{Name: "activity", MaxAttempts: 3, MaxReceiveCount: 10, VisibilityTimeout: 180},
		{Name: "task-dlq", DeadLetterOnly: true},
		// What EventBridge could not deliver: events a rule matched but could
		// not put on its queue, and sweeper schedule invocations that failed
		// after their retries. The stack sets it as the dead-letter queue of
		// every bus and schedule target.
		{Name: EventDeliveryDLQ, DeadLetterOnly: true},
		// The fan-out queues: their consumers time out after 10 s, so a
		// failing event reaches its DLQ within three minutes (3 attempts).
		{Name: "agent-messages", MaxAttempts: 3, MaxReceiveCount: 10, VisibilityTimeout: 60},
		{Name: "memory-events", MaxAttempts: 3, MaxReceiveCount: 10, VisibilityTimeout: 60},
		// Six times its consumer's 120 s (a fit is bounded by it).
		{Name: "agent-changes", MaxAttempts: 3, MaxReceiveCount: 10, VisibilityTimeout: 720},
		// Six times its consumer's 120 s.
		{Name: "routing-evaluations", MaxAttempts: 3, MaxReceiveCount: 10, VisibilityTimeout: 720},
		// The full payload of a session state that failed after its
		// retries (the session machines' Catch).
		{Name: "session-dlq", DeadLetterOnly: true},
		// The full payload of a plan state that failed after its retries
		// (the plan machine's Catch).
		{Name: "plan-dlq", DeadLetterOnly: true},
		// The status changes of the tasks of reports and consultations; its
		// consumer times out after 30 s.
		{Name: "report-tasks", MaxAttempts: 3, MaxReceiveCount: 10, VisibilityTimeout: 180},
		// The ends of work that may be linked to a conversation, for the
		// result-poster; its consumer times out after 10 s.
		{Name: "conversation-results", MaxAttempts: 3, MaxReceiveCount: 10, VisibilityTimeout: 60},
		// Six times its consumer's 30 s.
		{Name: "a2a-push", MaxAttempts: 3, MaxReceiveCount: 10, VisibilityTimeout: 180},
	}

	Rules = []Rule{
		{Name: "activity-all", Sources: []string{EventSource}, Queue: "activity"},
		{Name: "agent-messages", Sources: []string{EventSource}, DetailTypes: []string{"AgentMessageSent"}, Queue: "agent-messages"},
		{Name: "memory-shared", Sources: []string{EventSource}, DetailTypes: []string{"MemoryShared"}, Queue: "memory-events"},
		{Name: "agents-changed", Sources: []string{EventSource}, DetailTypes: []string{"AgentsChanged"}, Queue: "agent-changes"},
		{Name: "routing-evaluations", Sources: []string{EventSource}, DetailTypes: []string{"RoutingEvaluationRequested", "RoutingCorrected"}, Queue: "routing-evaluations"},
		// Only the tasks that deliver a report (reports.Sync skips the rest).
		{Name: "report-tasks", Sources: []string{EventSource}, DetailTypes: []string{"TaskStatusChanged"}, DetailPresent: []string{"report_id"}, Queue: "report-tasks"},
		// Only the tasks that answer a consultation, for the same
		// consumer (consultations.Service.SyncTask skips the rest).
		{Name: "consultation-tasks", Sources: []string{EventSource}, DetailTypes: []string{"TaskStatusChanged"}, DetailPresent: []string{"consultation_id"}, Queue: "report-tasks"},
		// Only work linked to a conversation (results.Poster skips the rest).
		{Name: "conversation-results", Sources: []string{EventSource}, DetailTypes: []string{"TaskStatusChanged", "ReportFinished", "SessionStatusChanged", "PlanCompleted"},
			DetailPresent: []string{"conversation_id"}, Queue: "conversation-results"},
		// Only the tasks created over A2A (server.Notifier skips the rest).
		{Name: "a2a-push", Sources: []string{EventSource}, DetailTypes: []string{"TaskStatusChanged"}, DetailPresent: []string{"a2a"}, Queue: "a2a-push"},
	}

	StateMachines = []StateMachine{
		{
			Name: "delegation",
			File: "delegation.asl.json",
			Substitutions: map[string]string{
				"LifecycleFunctionArn": "function:task-lifecycle",
				"WorkerFunctionArn":    "function:task-worker",
				"DeadLetterQueueUrl":   "queue:task-dlq",
			},
			Timeout: 900,
		},
		sessionMachine("supervisor_worker"),
		sessionMachine("pipeline"),
		sessionMachine("peer_review"),
		sessionMachine("brainstorm"),
		sessionMachine("consensus"),
		{
			Name: "plan",
			File: "plan.asl.json",
			Substitutions: map[string]string{
				"StepsFunctionArn":   "function:plan-steps",
				"DeadLetterQueueUrl": "queue:plan-dlq",
			},
			Timeout: 3600, // workflow.PlanMaxSeconds
		},
	}
)

// SessionMachineTimeout caps a session execution: the longest session
// (600 s of work) plus the longest wait for a human's approval (seven
// days). The session's own deadline is enforced inside it: every stage
// state's TimeoutSecondsPath is the time the session has left, and the
// sweeper ends a session past its deadline timed_out.
const SessionMachineTimeout = 600 + 7*24*3600 + 300

// sessionMachine is the collaboration pattern's machine: every state calls
// session-steps; failures go to the sessions dead-letter queue.
func sessionMachine(pattern string) StateMachine {
	return StateMachine{
		Name: pattern,
		File: pattern + ".asl.json",
		Substitutions: map[string]string{
			"StepsFunctionArn":   "function:session-steps",
			"DeadLetterQueueUrl": "queue:session-dlq",
		},
		Timeout: SessionMachineTimeout,
	}
}

// Lookup returns the function called name.
func Lookup(name string) (Function, bool) {
	for _, f := range Functions {
		if f.Name == name {
			return f, true
		}
	}
	return Function{}, false
}

// QueueByName returns the queue called name.
func QueueByName(name string) (Queue, bool) {
	for _, q := range Queues {
		if q.Name == name {
			return q, true
		}
	}
	return Queue{}, false
}

// Names builds the physical names of resources for one stage, so the CDK app
// and the local cloud name things identically.
type Names struct{ Stage string }

// Prefix is "conclave-<stage>".
func (n Names) Prefix() string { return "conclave-" + n.Stage }

// Function returns the physical function name.
func (n Names) Function(name string) string { return n.Prefix() + "-" + name }

// Queue returns the physical queue name.
func (n Names) Queue(name string) string { return n.Prefix() + "-" + name }

// Table returns the table name.
func (n Names) Table() string { return n.Prefix() + "-main" }

// Bus returns the event bus name.
func (n Names) Bus() string { return n.Prefix() + "-bus" }

// Rule returns the physical rule name.
func (n Names) Rule(name string) string { return n.Prefix() + "-" + name }

// StateMachine returns the physical state machine name.
func (n Names) StateMachine(name string) string { return n.Prefix() + "-" + name }

// Validate checks the manifest's internal references.
func Validate() error {
	seen := map[string]bool{}
	routes := map[string]bool{}
	for _, f := range Functions {
		if seen[f.Name] {
			return fmt.Errorf("function %q listed twice", f.Name)
		}
		seen[f.Name] = true
		if f.Timeout <= 0 || f.MemoryMB < 128 {
			return fmt.Errorf("function %q: timeout and memory must be set", f.Name)
		}
		if (f.Trigger == TriggerHTTP || f.Trigger == TriggerStream) != (len(f.Routes) > 0) {
			return fmt.Errorf("function %q: routes only and always on http and stream functions", f.Name)
		}
		for _, r := range f.Routes {
			// A route key is served once per API: the streaming API serves
			// some of the HTTP API's paths again (a streamed turn).
			key := string(f.Trigger) + " " + r.Key()
			if routes[key] {
				return fmt.Errorf("route %q served twice", r.Key())
			}
			routes[key], routes[r.Key()] = true, true
		}
		if (f.Trigger == TriggerSchedule) != (f.EveryMinutes > 0) {
			return fmt.Errorf("function %q: a schedule only and always on schedule functions", f.Name)
		}
		if err := f.validateGrants(); err != nil {
			return err
		}
		for _, target := range f.Invokes {
			if _, ok := Lookup(target); !ok || target == f.Name {
				return fmt.Errorf("function %q invokes unknown function %q", f.Name, target)
			}
		}
		if f.Trigger == TriggerSQS {
			q, ok := QueueByName(f.Queue)
			if !ok {
				return fmt.Errorf("function %q consumes unknown queue %q", f.Name, f.Queue)
			}
			if q.VisibilityTimeout < 6*f.Timeout {
				return fmt.Errorf("queue %q: visibility timeout %d s is below six times its consumer's timeout (%d s)", q.Name, q.VisibilityTimeout, f.Timeout)
			}
		}
	}
	for key := range RouteFlags {
		if !routes[key] {
			return fmt.Errorf("RouteFlags gates %q, which no function serves", key)
		}
	}
	for _, r := range Rules {
		if _, ok := QueueByName(r.Queue); !ok {
			return fmt.Errorf("rule %q targets unknown queue %q", r.Name, r.Queue)
		}
	}
	for _, sm := range StateMachines {
		for k, ref := range sm.Substitutions {
			if err := checkRef(ref); err != nil {
				return fmt.Errorf("state machine %q substitution %s: %w", sm.Name, k, err)
			}
		}
	}
	return nil
}

// validateGrants checks that f's grants are known and listed once, that
// it queries the indexes it names, and that it dead-letters only the
// queue it consumes.
func (f Function) validateGrants() error {
	seen := map[Grant]bool{}
	for _, g := range f.Grants {
		if !knownGrants[g] {
			return fmt.Errorf("function %q: unknown grant %q", f.Name, g)
		}
		if seen[g] {
			return fmt.Errorf("function %q: grant %q listed twice", f.Name, g)
		}
		seen[g] = true
	}
	if len(f.Indexes) > 0 && !seen[GrantQuery] {
		return fmt.Errorf("function %q: indexes without %s", f.Name, GrantQuery)
	}
	for _, ix := range f.Indexes {
		if !slices.ContainsFunc(MainTable.GSIs, func(g GSI) bool { return g.Name == ix }) {
			return fmt.Errorf("function %q queries unknown index %q", f.Name, ix)
		}
	}
	if seen[GrantDeadLetter] && f.Trigger != TriggerSQS {
		return fmt.Errorf("function %q: %s is the dead-letter queue of a trigger queue; it has none", f.Name, GrantDeadLetter)
	}
	return nil
}

func checkRef(ref string) error {
	r, err := ParseRef(ref)
	if err != nil {
		return err
	}
	switch r.Kind {
	case RefFunction:
		if _, ok := Lookup(r.Name); !ok {
			return fmt.Errorf("unknown function %q", r.Name)
		}
	case RefQueue:
		if _, ok := QueueByName(r.Name); !ok {
			return fmt.Errorf("unknown queue %q", r.Name)
		}
	}
	return nil
}
