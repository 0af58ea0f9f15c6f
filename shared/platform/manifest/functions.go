package manifest

// Functions lists every function.
var Functions = []Function{
	{
		Name:        "authorizer",
		Description: "Resolves the team from the X-Api-Key header or a bearer token of the team's OpenID Connect provider (HTTP API simple responses; the streaming API's REQUEST authorizer).",
		Domains:     []string{"identity", "teams"},
		Trigger:     TriggerAuthorizer,
		MemoryMB:    256, Timeout: 5,
		// UpdateItem: the team's request counter (TEAM_RATE_LIMIT).
		Grants: []Grant{GrantGetItem, GrantUpdateItem},
	},
	{
		Name:        "health",
		Description: "Reports the state of every dependency.",
		// It pings the table, the bus, the machines and the queues: no
		// domain's records.
		Domains:  []string{},
		Trigger:  TriggerHTTP,
		Routes:   []Route{{"GET", "/v1/health"}},
		MemoryMB: 256, Timeout: 10,
		Grants: []Grant{GrantDescribeTable, GrantDescribeEventBus, GrantDescribeStateMachine, GrantGetQueueAttributes},
	},
	{
		Name:        "agents",
		Description: "Agents API: create, list, get, update, pause, archive, default agent; the team's skill registry; the models the stage offers.",
		Domains:     []string{"agents", "cascade", "expertgate", "routing", "teams"},
		Trigger:     TriggerHTTP,
		Routes: []Route{
			{"POST", "/v1/agents"},
			{"GET", "/v1/agents"},
			{"GET", "/v1/agents/{slug}"},
			{"PATCH", "/v1/agents/{slug}"},
			{"POST", "/v1/agents/{slug}/pause"},
			{"POST", "/v1/agents/{slug}/activate"},
			{"POST", "/v1/agents/{slug}/archive"},
			{"POST", "/v1/agents/{slug}/refresh"},
			{"PUT", "/v1/team/default-agent"},
			// The team's skill registry, read from the agents.
			{"GET", "/v1/skills"},
			{"GET", "/v1/skills/{agent}/{name}"},
			// Examples suggested by users' corrections of the router
			// (shared/routing/suggestions).
			{"GET", "/v1/agents/{slug}/example-suggestions"},
			{"POST", "/v1/agents/{slug}/example-suggestions/{id}/accept"},
			{"POST", "/v1/agents/{slug}/example-suggestions/{id}/dismiss"},
			// The models the stage offers agents (its settings).
			{"GET", "/v1/models"},
		},
		MemoryMB: 512, Timeout: 15,
		// GrantModels: Titan's InvokeModel, for the skill vectors of an
		// agent written (EmbedderGrants: in a titan stage only). The
		// secrets: an external A2A agent's credential (docs/a2a.md).
		// GrantBusPut: AgentsChanged, for the classifier-fitter.
		Grants: []Grant{GrantGetItem, GrantPutItem, GrantUpdateItem, GrantDeleteItem, GrantQuery, GrantConditionCheckItem, GrantModels,
			GrantCreateSecret, GrantPutSecret, GrantDeleteSecret, GrantGetSecret, GrantBusPut},
	},
	{
		Name:        "team",
		Description: "The team, its API keys (list, create, rotate, revoke), its identity provider (OpenID Connect), its activity log, its monthly budget (CostGuard) and the attribution of its model spend.",
		Domains:     []string{"activity", "budget", "identity", "teams"},
		Trigger:     TriggerHTTP,
		Routes: []Route{
			{"GET", "/v1/team"},
			{"GET", "/v1/team/identity"},
			{"PUT", "/v1/team/identity"},
			{"GET", "/v1/keys"},
			{"POST", "/v1/keys"},
			{"POST", "/v1/keys/{id}/rotate"},
			{"DELETE", "/v1/keys/{id}"},
			{"GET", "/v1/activity"},
			{"GET", "/v1/budget"},
			{"PUT", "/v1/budget"},
			{"GET", "/v1/usage"},
		},
		MemoryMB: 256, Timeout: 10,
		Grants:  []Grant{GrantGetItem, GrantPutItem, GrantUpdateItem, GrantDeleteItem, GrantQuery, GrantConditionCheckItem},
		Indexes: []string{"gsi1"},
	},
	{
		Name:        "admin",
		Description: "Operator actions invoked directly (create a team and its first key).",
		Domains:     []string{"teams"},
		Trigger:     TriggerInvoke,
		MemoryMB:    256, Timeout: 15,
		Grants:  []Grant{GrantGetItem, GrantPutItem, GrantUpdateItem, GrantQuery, GrantConditionCheckItem},
		Indexes: []string{"gsi1"},
	},
	{
		Name:        "tasks",
		Description: "Tasks API: the task board, delegation, lifecycle verbs, long-poll for results, agent load; the approval policy and the approvals of tool calls.",
		Domains:     []string{"agents", "approvals", "consultations", "conversations", "discovery", "cascade", "expertgate", "memory", "messaging", "reports", "routing", "sessions", "tasks", "teams"},
		Trigger:     TriggerHTTP,
		Routes: []Route{
			{"POST", "/v1/tasks"},
			{"GET", "/v1/tasks"},
			{"GET", "/v1/tasks/{id}"},
			{"POST", "/v1/tasks/{id}/start"},
			{"POST", "/v1/tasks/{id}/complete"},
			{"POST", "/v1/tasks/{id}/fail"},
			{"POST", "/v1/tasks/{id}/block"},
			{"POST", "/v1/tasks/{id}/cancel"},
			{"POST", "/v1/tasks/{id}/assign"},
			{"POST", "/v1/tasks/{id}/delegate"},
			{"GET", "/v1/agents/{slug}/load"},
			{"POST", "/v1/agents/{slug}/next-task"},
			// Approvals of tasks' tool calls (docs/approvals.md).
			{"GET", "/v1/approval-policy"},
			{"PUT", "/v1/approval-policy"},
			{"GET", "/v1/approvals"},
			{"GET", "/v1/approvals/{id}"},
			{"POST", "/v1/approvals/{id}"},
			// Due dates: whether an overdue task escalates.
			{"GET", "/v1/board-policy"},
			{"PUT", "/v1/board-policy"},
		},
		// 29 s: the long-poll waits at most 25 s, below API Gateway's 30 s.
		MemoryMB: 512, Timeout: 29,
		Grants: []Grant{
			GrantGetItem, GrantPutItem, GrantUpdateItem, GrantDeleteItem, GrantQuery, GrantConditionCheckItem,
			GrantBusPut, GrantStartExecution, GrantStopExecution, GrantCallback,
		},
		// GET /v1/tasks?conversation_id= reads the conversation's work (gsi4).
		Indexes: []string{"gsi1", "gsi2", "gsi4"},
	},
	{
		Name: "console",
		Description: "The team's console (docs/console.md): a web page, bundled with the function, that talks to the team through the public API " +
			"as any client does; public routes (a page loads before anyone signs in), no credential, no table.",
		// It serves files: no domain's records.
		Domains:  []string{},
		Trigger:  TriggerHTTP,
		Public:   true,
		Routes:   []Route{{"GET", "/console"}, {"GET", "/console/{file}"}, {"GET", "/console/vendor/{file}"}},
		MemoryMB: 256, Timeout: 5,
	},
	{
		Name: "a2a",
		Description: "The team as an A2A 1.0 agent (docs/a2a.md): its agent card, and the JSON-RPC endpoint whose messages are routed " +
			"and run as tasks; the key is checked here (public routes), so every error is a JSON-RPC error.",
		Domains: []string{"agents", "approvals", "consultations", "conversations", "discovery", "cascade", "expertgate", "a2a", "identity", "memory", "messaging", "reports", "routing", "sessions", "tasks", "teams"},
		Trigger: TriggerHTTP,
		Public:  true,
		Routes: []Route{
			{"GET", "/a2a/{a2a_id}/.well-known/agent-card.json"},
			{"POST", "/a2a/{a2a_id}"},
		},
		// 29 s: SendMessage waits for its task at most 20 s, below API
		// Gateway's 30 s.
		MemoryMB: 512, Timeout: 29,
		Grants: []Grant{
			GrantGetItem, GrantPutItem, GrantUpdateItem, GrantDeleteItem, GrantQuery, GrantConditionCheckItem,
			GrantBusPut, GrantStartExecution, GrantStopExecution, GrantCallback,
		},
		Indexes: []string{"gsi1", "gsi2", "gsi4"},
		Invokes: []string{"expert-gate"},
	},
	{
		Name:        "task-lifecycle",
		Description: "Marks a task running, completed, failed or timed_out for the delegation state machine, and registers a waiting parent's task token on its child.",
		Domains:     []string{"agents", "approvals", "memory", "messaging", "routing", "sessions", "tasks", "teams"},
		Trigger:     TriggerStepFunction,
		MemoryMB:    256, Timeout: 15,
		Grants:  []Grant{GrantConditionCheckItem, GrantDeleteItem, GrantGetItem, GrantPutItem, GrantQuery, GrantUpdateItem, GrantBusPut, GrantCallback},
		Indexes: []string{"gsi2"},
	},
	{
		Name:        "task-worker",
		Description: "Runs an agent on a task through the model port, with the collaboration tools (delegation state machine task).",
		Domains:     []string{"agents", "approvals", "budget", "consultations", "conversations", "discovery", "cascade", "expertgate", "memory", "messaging", "reports", "routing", "sessions", "tasks", "teams"},
		Trigger:     TriggerStepFunction,
		MemoryMB:    512, Timeout: 150,
		Grants: []Grant{
			GrantGetItem, GrantPutItem, GrantUpdateItem, GrantDeleteItem, GrantQuery, GrantConditionCheckItem,
			GrantBusPut, GrantStartExecution, GrantStopExecution, GrantModels, GrantModelsStream,
			// An MCP pack's tool call sends the pack's credential.
			GrantGetSecret,
		},
		// next_task reads the agent's queue (gsi2).
		Indexes: []string{"gsi2"},
		// find_colleagues asks the ExpertGate function, as discovery does.
		Invokes: []string{"expert-gate"},
	},
	{
		Name:        "conversations",
		Description: "Conversations and chat: routes each message (direct, AgentRouter or ExpertGate + strategy), runs the agents, records the turn and its routing decision; feedback; the tools an agent's model receives and the tool packs.",
		Domains:     []string{"agents", "approvals", "budget", "consultations", "conversations", "discovery", "cascade", "expertgate", "memory", "messaging", "plans", "reports", "results", "routing", "sessions", "tasks", "teams"},
		Trigger:     TriggerHTTP,
		Routes: []Route{
			{"POST", "/v1/conversations"},
			{"GET", "/v1/conversations"},
			{"GET", "/v1/conversations/{id}"},
			{"GET", "/v1/conversations/{id}/messages"},
			{"POST", "/v1/conversations/{id}/messages"},
			{"POST", "/v1/conversations/{id}/messages/{message_id}/feedback"},
			{"POST", "/v1/conversations/{id}/close"},
			{"POST", "/v1/conversations/{id}/handoff"},
			{"POST", "/v1/conversations/{id}/return"},
			{"GET", "/v1/conversations/{id}/handoffs"},
			{"POST", "/v1/conversations/{id}/agents"},
			{"GET", "/v1/conversations/{id}/context"},
			// What the conversation started (gsi4).
			{"GET", "/v1/conversations/{id}/work"},
			// The tools an agent's model receives: served where the tool
			// catalog is linked already (a chat reply's tools), not by
			// the agents function, which would link it for this alone.
			{"GET", "/v1/agents/{slug}/tools"},
			// The tool packs with their tools' schemas: the same catalog,
			// and the team's MCP packs (their credentials in Secrets
			// Manager).
			{"GET", "/v1/tool-packs"},
			{"GET", "/v1/tool-packs/{name}"},
			{"PUT", "/v1/tool-packs/{name}"},
			{"DELETE", "/v1/tool-packs/{name}"},
		},
		// 29 s: a turn spends at most 24 s on models, below API Gateway's 30 s.
		MemoryMB: 1024, Timeout: 29,
		// Step Functions: a reply's delegation, report or session starts
		// its execution (and a report that cannot be stored stops its
		// task's).
		Grants: []Grant{
			GrantGetItem, GrantPutItem, GrantUpdateItem, GrantDeleteItem, GrantQuery, GrantConditionCheckItem,
			GrantBusPut, GrantModels, GrantModelsStream, GrantStartExecution, GrantStopExecution,
			// PUT and DELETE /v1/tool-packs/{name}: an MCP pack's credential.
			GrantGetSecret, GrantCreateSecret, GrantPutSecret, GrantDeleteSecret,
			// GET /v1/conversations?agent=: a page of the agent's
			// conversations, read by their keys at once.
			GrantBatchGetItem,
		},
		// A reply's next_task reads the agent's queue (gsi2); a skill's
		// open_tasks loader lists the agent's tasks (gsi1); GET …/work and
		// ?agent= read the conversations' index (gsi4).
		Indexes: []string{"gsi1", "gsi2", "gsi4"},
		Invokes: []string{"expert-gate"},
	},
	{
		Name: "streams",
		Description: "The streaming API (docs/streaming.md): a chat turn answered as Server-Sent Events while it runs (routing, deltas, " +
			"tool calls, replies, the stored turn), and the resumable event streams of a conversation, a session and a plan.",
		// A streamed turn is a chat turn: the conversations function's
		// domains, wiring and grants (but the tool packs' registration).
		Domains: []string{"agents", "approvals", "budget", "consultations", "conversations", "discovery", "cascade", "expertgate", "memory", "messaging", "plans", "reports", "results", "routing", "sessions", "tasks", "teams"},
		Trigger: TriggerStream,
		Routes: []Route{
			{"POST", "/v1/conversations/{id}/messages"},
			{"GET", "/v1/conversations/{id}/events"},
			{"GET", "/v1/sessions/{id}/events"},
			{"GET", "/v1/plans/{id}/events"},
		},
		// 900 s, Lambda's most: a conversation's stream closes after 14
		// minutes (the client resumes), a run's when the run ends or at
		// 14 minutes; a streamed turn keeps the chat turn's own deadline.
		MemoryMB: 1024, Timeout: 900,
		Grants: []Grant{
			GrantGetItem, GrantPutItem, GrantUpdateItem, GrantDeleteItem, GrantQuery, GrantConditionCheckItem,
			GrantBusPut, GrantModels, GrantModelsStream, GrantStartExecution, GrantStopExecution,
			// An MCP pack's tool call sends the pack's credential.
			GrantGetSecret,
			// Linked with the chat service's wiring (conversationsfn), which
			// registers MCP packs and lists conversations by agent; the
			// streaming routes never call them, but a grant is held to
			// what the code links (infra/grants).
			GrantCreateSecret, GrantPutSecret, GrantDeleteSecret, GrantBatchGetItem,
		},
		Indexes: []string{"gsi1", "gsi2", "gsi4"},
		Invokes: []string{"expert-gate"},
	},
	{
		Name: "a2a-stream",
		Description: "The team's A2A agent on the streaming API (docs/a2a.md): the same JSON-RPC endpoint as the a2a function's, " +
			"whose SendStreamingMessage and SubscribeToTask answer as Server-Sent Events while the task runs; the key is checked here (public route).",
		// The a2a function's agent, served on the other API: its domains,
		// wiring and grants.
		Domains: []string{"agents", "approvals", "consultations", "conversations", "discovery", "cascade", "expertgate", "a2a", "identity", "memory", "messaging", "reports", "routing", "sessions", "tasks", "teams"},
		Trigger: TriggerStream,
		Public:  true,
		Routes: []Route{
			{"POST", "/a2a/{a2a_id}"},
		},
		// 900 s, Lambda's most: a stream closes when its task ends or
		// after 14 minutes (the client subscribes again).
		MemoryMB: 512, Timeout: 900,
		Grants: []Grant{
			GrantGetItem, GrantPutItem, GrantUpdateItem, GrantDeleteItem, GrantQuery, GrantConditionCheckItem,
			GrantBusPut, GrantStartExecution, GrantStopExecution, GrantCallback,
		},
		Indexes: []string{"gsi1", "gsi2", "gsi4"},
		Invokes: []string{"expert-gate"},
	},
	{
		Name:        "expert-gate",
		Description: "ExpertGate: scores a team's active agents for a query on skill match, past performance, personality fit and load; complexity and model tier.",
		Domains:     []string{"agents", "expertgate", "routing", "teams"},
		Trigger:     TriggerInvoke,
		// Scoring is CPU-bound; 1024 MB buys a full vCPU.
		MemoryMB: 1024, Timeout: 10,
		// Query: the agents, loads, ratings, stored skill vectors and the
		// classifier's parts; GetItem: the classifier's head. The
		// rest is the Titan embedder's (EmbedderGrants: in a titan stage
		// only): InvokeModel, and the skill vectors it stores and
		// replaces.
		Grants: []Grant{GrantGetItem, GrantQuery, GrantPutItem, GrantDeleteItem, GrantModels},
	},
	{
		Name:        "discovery",
		Description: "Agent discovery: recommendations for a query (through the ExpertGate), experts by required skills, availability.",
		Domains:     []string{"agents", "discovery", "expertgate", "routing", "teams"},
		Trigger:     TriggerHTTP,
		Routes: []Route{
			{"GET", "/v1/agents/recommend"},
			{"GET", "/v1/agents/experts"},
			{"GET", "/v1/agents/{slug}/availability"},
		},
		MemoryMB: 512, Timeout: 15,
		Grants:  []Grant{GrantGetItem, GrantQuery},
		Invokes: []string{"expert-gate"},
	},
	{
		Name:        "routing",
		Description: "The routing decision log and its analytics; the team's routing calibration (examples per skill, its classifier and the classifier's cross-validated quality); routing evaluations of a team's labelled messages.",
		Domains:     []string{"agents", "cascade", "expertgate", "routing", "teams"},
		Trigger:     TriggerHTTP,
		Routes: []Route{
			{"GET", "/v1/routing/decisions"},
			{"GET", "/v1/routing/decisions/{id}"},
			{"GET", "/v1/routing/analytics/agents"},
			{"GET", "/v1/routing/analytics/strategies"},
			{"GET", "/v1/routing/calibration"},
			{"POST", "/v1/routing/evaluations"},
			{"GET", "/v1/routing/evaluations"},
			{"GET", "/v1/routing/evaluations/{id}"},
		},
		MemoryMB: 512, Timeout: 15,
		// PutItem and BusPut: an evaluation created and announced
		// (RoutingEvaluationRequested), marked failed when the
		// announcement fails; PutItem and DeleteItem: the idempotency
		// records of its POST.
		Grants:  []Grant{GrantDeleteItem, GrantGetItem, GrantPutItem, GrantQuery, GrantBusPut},
		Indexes: []string{"gsi1"},
	},
	{
		Name:        "messages",
		Description: "Agent messaging: send (direct, team, task:<id>, collab:<id>), read and acknowledge an agent's inbox.",
		Domains:     []string{"agents", "approvals", "memory", "messaging", "routing", "sessions", "tasks", "teams"},
		Trigger:     TriggerHTTP,
		Routes: []Route{
			{"POST", "/v1/agents/{slug}/messages"},
			{"GET", "/v1/agents/{slug}/inbox"},
			{"POST", "/v1/agents/{slug}/inbox/read"},
		},
		MemoryMB: 256, Timeout: 10,
		Grants: []Grant{GrantGetItem, GrantPutItem, GrantUpdateItem, GrantDeleteItem, GrantQuery, GrantBusPut},
	},
	{
		Name:        "memories",
		Description: "The team memory bus: an agent learns a private or shared memory; shared ones are announced (MemoryShared).",
		Domains:     []string{"agents", "memory", "teams"},
		Trigger:     TriggerHTTP,
		Routes: []Route{
			{"POST", "/v1/agents/{slug}/memories"},
			{"GET", "/v1/agents/{slug}/memories"},
		},
		MemoryMB: 256, Timeout: 10,
		Grants: []Grant{GrantGetItem, GrantPutItem, GrantUpdateItem, GrantDeleteItem, GrantQuery, GrantBusPut},
	},
	{
		Name:        "message-fanout",
		Description: "Writes one inbox entry per recipient of an AgentMessageSent event, idempotently (bus -> rule -> SQS).",
		Domains:     []string{"agents", "approvals", "memory", "messaging", "routing", "sessions", "tasks", "teams"},
		Trigger:     TriggerSQS,
		Queue:       "agent-messages",
		BatchSize:   10,
		MemoryMB:    256, Timeout: 10,
		Grants: []Grant{GrantGetItem, GrantPutItem, GrantUpdateItem, GrantQuery, GrantDeadLetter},
	},
	{
		Name:        "memory-invalidator",
		Description: "Drops the cached memory context of every agent of a team on MemoryShared (bus -> rule -> SQS).",
		Domains:     []string{"agents", "memory", "teams"},
		Trigger:     TriggerSQS,
		Queue:       "memory-events",
		BatchSize:   10,
		MemoryMB:    256, Timeout: 10,
		Grants: []Grant{GrantUpdateItem, GrantDeleteItem, GrantQuery, GrantDeadLetter},
	},
	{
		Name:        "classifier-fitter",
		Description: "Fits a team's routing classifier to its active agents' skills and examples on AgentsChanged (bus -> rule -> SQS), for the ExpertGate.",
		Domains:     []string{"agents", "expertgate", "routing", "teams"},
		Trigger:     TriggerSQS,
		Queue:       "agent-changes",
		// One team's fit per invocation: a fit is CPU-bound.
		BatchSize: 1,
		// 1,769 MB is one full vCPU: a fit and its cross-validation at the
		// classifier's bounds take about a minute of it.
		MemoryMB: 1769, Timeout: 120,
		// Query and GetItem: the agents, the stored classifier and skill
		// vectors; PutItem and DeleteItem: the classifier's items (and a
		// titan stage's vectors, with InvokeModel: EmbedderGrants);
		// UpdateItem: the consumer's attempt count.
		Grants: []Grant{GrantGetItem, GrantQuery, GrantPutItem, GrantDeleteItem, GrantUpdateItem, GrantDeadLetter, GrantModels},
	},
	{
		Name:        "routing-evaluator",
		Description: "Runs a routing evaluation on RoutingEvaluationRequested (bus -> rule -> SQS), each labelled message scored by the ExpertGate; keeps a user's correction of the router (RoutingCorrected) as a suggested example of the agent they chose.",
		Domains:     []string{"agents", "cascade", "expertgate", "routing", "teams"},
		Trigger:     TriggerSQS,
		Queue:       "routing-evaluations",
		// One evaluation per invocation: up to 200 gate calls, 8 at once.
		BatchSize: 1,
		MemoryMB:  256, Timeout: 120,
		// GetItem and Query: the evaluation, the team's agents and default,
		// a corrected decision, an agent's suggestions; PutItem: its
		// result; UpdateItem: the consumer's attempt count; a suggestion
		// is one transaction (PutItem, UpdateItem of the agent's head,
		// DeleteItem of the oldest pushed out).
		Grants:  []Grant{GrantGetItem, GrantQuery, GrantPutItem, GrantUpdateItem, GrantDeleteItem, GrantDeadLetter},
		Invokes: []string{"expert-gate"},
	},
	{
		Name:         "task-sweeper",
		Description:  "Ends running tasks and sessions past their deadline; flags overdue tasks (TaskOverdue, escalated under the board policy); fails plans whose machine was lost; fetches external A2A agents' cards again when due.",
		Domains:      []string{"agents", "approvals", "conversations", "cascade", "expertgate", "memory", "messaging", "plans", "reports", "routing", "sessions", "tasks", "teams"},
		Trigger:      TriggerSchedule,
		EveryMinutes: 1,
		MemoryMB:     256, Timeout: 60,
		// GetSecret: an A2A agent's card is fetched with its credential
		// (agents.CardRefreshEvery).
		// StartExecution: the sessions left planning are started by the
		// reconciler (sessions.Reconcile), the plans whose machine has not
		// begun by the plans' sweep (plans.Sweep).
		Grants:  []Grant{GrantConditionCheckItem, GrantDeleteItem, GrantGetItem, GrantPutItem, GrantQuery, GrantUpdateItem, GrantBusPut, GrantCallback, GrantStartExecution, GrantStopExecution, GrantGetSecret},
		Indexes: []string{"gsi2", "gsi3"},
	},
	{
		Name:        "sessions",
		Description: "Collaboration sessions API: create (starts the pattern's state machine), list, get, trace, cancel, approve or reject, resume.",
		Domains:     []string{"agents", "approvals", "conversations", "cascade", "expertgate", "memory", "messaging", "routing", "sessions", "tasks", "teams"},
		Trigger:     TriggerHTTP,
		Routes: []Route{
			{"POST", "/v1/sessions"},
			{"GET", "/v1/sessions"},
			{"GET", "/v1/sessions/{id}"},
			{"GET", "/v1/sessions/{id}/trace"},
			{"POST", "/v1/sessions/{id}/cancel"},
			{"POST", "/v1/sessions/{id}/approve"},
			{"POST", "/v1/sessions/{id}/resume"},
		},
		MemoryMB: 512, Timeout: 15,
		// GetSecret: a cancel cancels the tasks of A2A agents its stages
		// wait for, with each agent's credential; ConditionCheckItem: and
		// fails the stages' tasks (the task model's transactions).
		Grants:  []Grant{GrantConditionCheckItem, GrantDeleteItem, GrantGetItem, GrantPutItem, GrantQuery, GrantUpdateItem, GrantBusPut, GrantCallback, GrantStartExecution, GrantStopExecution, GrantGetSecret},
		Indexes: []string{"gsi2"},
	},
	{
		Name:        "plans",
		Description: "Compound plans API: list, read (steps, statuses, outputs, timings, cost) and cancel the plans chat turns start.",
		Domains:     []string{"agents", "approvals", "conversations", "cascade", "expertgate", "memory", "messaging", "plans", "reports", "routing", "sessions", "tasks", "teams"},
		Trigger:     TriggerHTTP,
		Routes: []Route{
			{"GET", "/v1/plans"},
			{"GET", "/v1/plans/{id}"},
			{"POST", "/v1/plans/{id}/cancel"},
		},
		MemoryMB: 256, Timeout: 15,
		Grants:  []Grant{GrantConditionCheckItem, GrantDeleteItem, GrantGetItem, GrantPutItem, GrantQuery, GrantUpdateItem, GrantBusPut, GrantCallback, GrantStopExecution},
		Indexes: []string{"gsi2"},
	},
	{
		Name:        "plan-steps",
		Description: "Every state of the plan machine: begin, start a step (an executed task delegated from the plan's root), wait for a slot or for the step, end a step, the next round, the lead's synthesis, complete, fail.",
		Domains:     []string{"agents", "approvals", "budget", "conversations", "cascade", "expertgate", "memory", "messaging", "plans", "reports", "routing", "sessions", "tasks", "teams"},
		Trigger:     TriggerStepFunction,
		MemoryMB:    512, Timeout: 150,
		Grants:  []Grant{GrantModels, GrantModelsStream, GrantConditionCheckItem, GrantDeleteItem, GrantGetItem, GrantPutItem, GrantQuery, GrantUpdateItem, GrantBusPut, GrantCallback, GrantStartExecution, GrantStopExecution, GrantGetSecret},
		Indexes: []string{"gsi1", "gsi2", "gsi4"},
	},
	{
		Name:        "session-steps",
		Description: "Every state of the collaboration machines: begin, plan, one agent's stage (a task of the task model, through the model port), decide a round, synthesize, wait for a human, complete, fail.",
		Domains:     []string{"agents", "approvals", "budget", "conversations", "cascade", "expertgate", "memory", "messaging", "routing", "sessions", "tasks", "teams"},
		Trigger:     TriggerStepFunction,
		MemoryMB:    512, Timeout: 150,
		Grants:  []Grant{GrantModels, GrantModelsStream, GrantConditionCheckItem, GrantDeleteItem, GrantGetItem, GrantPutItem, GrantQuery, GrantUpdateItem, GrantBusPut, GrantCallback, GrantGetSecret},
		Indexes: []string{"gsi2"},
	},
	{
		Name:        "reports",
		Description: "Reports API: the eight templates, report requests (a report is a task of the task model, created and started through the task service), reads with long-poll.",
		Domains:     []string{"agents", "approvals", "conversations", "cascade", "expertgate", "memory", "messaging", "reports", "routing", "sessions", "tasks", "teams"},
		Trigger:     TriggerHTTP,
		Routes: []Route{
			{"GET", "/v1/report-templates"},
			{"POST", "/v1/reports"},
			{"GET", "/v1/reports"},
			{"GET", "/v1/reports/{id}"},
		},
		// 29 s: the long-poll waits at most 25 s, below API Gateway's 30 s.
		MemoryMB: 512, Timeout: 29,
		// Stop: a task whose report cannot be recorded is canceled.
		Grants:  []Grant{GrantConditionCheckItem, GrantDeleteItem, GrantGetItem, GrantPutItem, GrantQuery, GrantUpdateItem, GrantBusPut, GrantStartExecution, GrantStopExecution},
		Indexes: []string{"gsi2"},
	},
	{
		Name:        "consultations",
		Description: "Consultations API: an agent asks for help, the ExpertGate function chooses the specialist, the curated context package (secrets redacted), the specialist's answer through the model port, loop detection and escalation to a human, outcomes, metrics.",
		Domains:     []string{"agents", "approvals", "budget", "consultations", "expertgate", "memory", "messaging", "routing", "sessions", "tasks", "teams"},
		Trigger:     TriggerHTTP,
		Routes: []Route{
			{"POST", "/v1/consultations"},
			{"GET", "/v1/consultations"},
			{"GET", "/v1/consultations/metrics"},
			{"GET", "/v1/consultations/{id}"},
			{"POST", "/v1/consultations/{id}/exchanges"},
			{"POST", "/v1/consultations/{id}/outcome"},
			{"GET", "/v1/escalations"},
			{"POST", "/v1/escalations/{id}/resolve"},
		},
		// 29 s: the specialist's answer is bounded at 20 s, below API
		// Gateway's 30 s.
		MemoryMB: 1024, Timeout: 29,
		// ConditionCheckItem and Step Functions: resolving a task_overdue
		// escalation cancels or requeues the task (its slot, its
		// execution stopped or started again, a waiting parent woken).
		// GetSecret: a specialist outside the team (an A2A agent) is
		// called with its credential.
		Grants:  []Grant{GrantModels, GrantModelsStream, GrantConditionCheckItem, GrantDeleteItem, GrantGetItem, GrantPutItem, GrantQuery, GrantUpdateItem, GrantBusPut, GrantCallback, GrantStartExecution, GrantStopExecution, GrantGetSecret},
		Indexes: []string{"gsi2"},
		// The specialist is ranked by the gate every other function uses
		// (shared/wire/gatewiring).
		Invokes: []string{"expert-gate"},
	},
	{
		Name:        "report-finalizer",
		Description: "Brings a report up to date on each status change of its task; at the end parses, validates and stores it as a procedural memory, publishing ReportFinished; records the answer of a consultation's task or escalates it (bus -> rule -> SQS).",
		Domains:     []string{"agents", "approvals", "cascade", "consultations", "conversations", "expertgate", "memory", "messaging", "reports", "routing", "sessions", "tasks", "teams"},
		Trigger:     TriggerSQS,
		Queue:       "report-tasks",
		BatchSize:   10,
		MemoryMB:    256, Timeout: 30,
		Grants: []Grant{GrantGetItem, GrantPutItem, GrantUpdateItem, GrantDeleteItem, GrantQuery, GrantBusPut, GrantDeadLetter},
	},
	{
		Name:        "result-poster",
		Description: "Posts the result (or failure) of a task, report, session or consultation linked to a conversation into it, once, as the message of the agent that did the work (bus -> rule -> SQS).",
		Domains:     []string{"agents", "approvals", "cascade", "consultations", "conversations", "expertgate", "memory", "messaging", "plans", "reports", "results", "routing", "sessions", "tasks", "teams"},
		Trigger:     TriggerSQS,
		Queue:       "conversation-results",
		BatchSize:   10,
		MemoryMB:    256, Timeout: 10,
		Grants: []Grant{GrantGetItem, GrantPutItem, GrantUpdateItem, GrantDeadLetter},
	},
	{
		Name:        "a2a-push",
		Description: "Sends the A2A push notifications of tasks created over A2A: each status change to the task's push configs, through the network policy (bus -> rule -> SQS).",
		// the A2A server's task view links the domains of the A2A endpoint.
		Domains:   []string{"agents", "approvals", "conversations", "cascade", "expertgate", "a2a", "memory", "messaging", "routing", "sessions", "tasks", "teams"},
		Trigger:   TriggerSQS,
		Queue:     "a2a-push",
		BatchSize: 10,
		// 30 s: a batch of ten, each to at most five URLs of 10 s each,
		// would not fit; a notification that times out is retried.
		MemoryMB: 256, Timeout: 30,
		Grants: []Grant{GrantGetItem, GrantQuery, GrantUpdateItem, GrantDeadLetter},
	},
	{
		Name:        "activity-recorder",
		Description: "Records every Conclave event in the team's activity log (bus -> rule -> SQS).",
		Domains:     []string{"activity"},
		Trigger:     TriggerSQS,
		Queue:       "activity",
		BatchSize:   10,
		MemoryMB:    256, Timeout: 30,
		Grants: []Grant{GrantPutItem, GrantUpdateItem, GrantDeadLetter},
	},
}

// EmbedderGrants are the grants a function holds for the Titan embedder
// alone (ROUTING_EMBEDDER=titan; shared/models/bedrock TitanEmbedder and
// the stored skill vectors, shared/routing/expertgate vectors.go). A function's
// code, one binary for every stage, links those calls in every stage, so
// its entry lists them (infra/grants holds entries to the code); the stack
// grants them only to a stage whose embedder is titan, and there scopes
// GrantModels to the Titan model alone (settings.TitanEmbedModel), not to
// the stage's chat models.
var EmbedderGrants = map[string][]Grant{
	"expert-gate":       {GrantPutItem, GrantDeleteItem, GrantModels},
	"agents":            {GrantModels},
	"classifier-fitter": {GrantModels},
}
