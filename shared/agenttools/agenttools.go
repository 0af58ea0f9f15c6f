// Package agenttools is the wing of what a model may call: an agent's
// tools, working on a task (Tools, the worker's) or answering in a chat
// (Chat, the conversation's). The collaboration tools of the task system,
// delegate_task (a delegation linked to the task being worked on or to the
// conversation) and check_task_status, the messaging tools
// send_agent_message and get_agent_inbox, the report tools request_report
// and get_report, start_collaboration, handoff_to in a chat, the declared
// memory tools search_memories and share_memory (each the same service as
// the HTTP API), and the tools of the team's MCP packs. Which tools an
// agent gets is the catalog's (shared/tools/catalog): the stage's flags
// and the agent's declared tools. It sits above work, whose services its
// tools call, and below a2a.
package agenttools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/platform/tracing"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/tools/catalog"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/work/consultations"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Tools implements worker.Tools on the task, messaging and report
// services.
type Tools struct {
	// Flags are the stage's feature flags: they decide which tools exist
	// (catalog.Allowed).
	Flags    settings.Flags
	Tasks    *tasks.Service
	Messages *messaging.Service
	// Memories serves search_memories and share_memory; nil answers them
	// "not available".
	Memories MemoryTools

	// Sessions starts collaboration sessions (start_collaboration); nil
	// leaves the tool out.
	Sessions SessionStarter
	// Reports serves request_report and get_report; nil answers them
	// "not available".
	Reports *reports.Service
	// Consultations serves consult_specialist; nil leaves the tool out.
	Consultations *consultations.Service
	// Colleagues answers find_colleagues through the ExpertGate
	// (discovery.Service); nil leaves the tool out.
	Colleagues ColleagueFinder
	// Approvals reads the team's approval policy: a chat call it gates is
	// held in a task that finishes the reply once a human decides (chat.go;
	// in a task the worker gates calls itself); nil gates nothing.
	Approvals worker.Policies
	// Model answers the bridging tools that ask a model (summarize_text,
	// extract_structured_data, compare_texts); nil leaves them out.
	Model models.Model
	// BridgeModelID is the model they ask ("" is the provider's default).
	BridgeModelID string
	// Clipboard keeps clipboard_store's values; nil leaves the clipboard
	// tools out.
	Clipboard *toolpacks.Clipboard
	// MCPPacks is the team's MCP packs (toolpacks.Registry); nil offers
	// none of them.
	MCPPacks *toolpacks.Registry
}

var _ worker.Tools = (*Tools)(nil)

// defs is every tool of the catalog, by name: its input type gives its
// schema (schema.go).
var defs = func() map[string]def {
	out := map[string]def{}
	for _, d := range []def{
		define(catalog.DelegateTask, `Delegate a sub-task to a colleague (a slug of your team: find one with find_colleagues) and, by default, wait for its result.`, (*Tools).delegate),
		define(catalog.CheckTaskStatus, `Check a task you delegated: its status and, once it ended, its result.`, (*Tools).checkStatus),
		define(catalog.NextTask, `Start your most urgent queued board task (by priority, then oldest) and read it; says so when your queue is empty.`, (*Tools).nextTask),
		define(catalog.RequestReport, `Request a structured report from a colleague; returns the report id (read it with get_report), or waits for it with wait_for_result.`, (*Tools).requestReport),
		define(catalog.GetReport, `Read a report you requested: its status and, once done, its sections.`, (*Tools).getReport),
		define(catalog.StartCollaboration, `Start a multi-agent collaboration session that you lead; follow it on the collab:<session id> channel.`, (*Tools).startCollaboration),
		define(catalog.SendAgentMessage, `Send a message to a colleague (to_agent), or to a channel (team, task:<id>, collab:<id>).`, (*Tools).sendMessage),
		define(catalog.GetAgentInbox, `Read your messages from other agents (the unread ones are marked read).`, (*Tools).inbox),
		define(catalog.HandoffTo, `Hand this conversation over to a colleague better placed to help: they answer the user from the next message on.`, (*Tools).handoffTo),
		define(catalog.SearchMemories, `Search what you and the team remember (shared memories and your own).`, (*Tools).searchMemories),
		define(catalog.ShareMemory, `Share something the whole team should remember.`, (*Tools).shareMemory),
		define(catalog.ConsultSpecialist, consultDescription, (*Tools).consult),
		define(catalog.ConsultationFollowUp, `Follow up on a consultation you asked (consult_specialist) with another message to the same specialist.`, (*Tools).consultFollowUp),
		define(catalog.CloseConsultation, `Rate a consultation you asked once it has answered you (rating and lessons learned, shared with the team); it then takes no more follow-ups.`, (*Tools).closeConsultation),
		define(catalog.ReadConsultation, `Read a consultation you asked: its status and answer (a human's, after an escalation).`, (*Tools).readConsultation),
		define(catalog.FindColleagues, `Ask the ExpertGate which colleagues fit a need: each candidate's slug, name, matching skills, confidence, availability and load.`, (*Tools).findColleagues),
		define(catalog.RequestToolPack, `Add a tool pack to this task or this chat reply: its tools are yours from your next step to the end of it (collaboration, memory, board, reporting, bridging, or one of your team's MCP packs).`, (*Tools).requestPack),
		define(catalog.SummarizeText, `Summarize a text (a colleague's result, a long answer) to pass it on; charged to your task's or reply's token budget.`, (*Tools).summarize),
		define(catalog.ExtractStructuredData, `Extract data from a text as JSON valid against a JSON Schema you give; an answer that does not fit the schema comes back as an error. Charged to your task's or reply's token budget.`, (*Tools).extract),
		define(catalog.CompareTexts, `Compare two texts: what they agree on and where they differ; charged to your task's or reply's token budget.`, (*Tools).compare),
		define(catalog.ClipboardStore, `Keep a value on the clipboard of this plan (every step of it reads it) or of this conversation, for a day.`, (*Tools).clipStore),
		define(catalog.ClipboardGet, `Read a value from the clipboard of this plan or of this conversation.`, (*Tools).clipGet),
	} {
		out[d.spec.Name] = d
	}
	for _, name := range catalog.Names() {
		if _, ok := out[name]; !ok {
			panic("agenttools: no tool for catalog entry " + name)
		}
	}
	return out
}()

// available reports whether the service a tool needs is wired: a tool
// whose service is not is left out (sessions while their flag is off, a
// function without consultations or without the gate).
func (t *Tools) available(name string) bool {
	switch name {
	case catalog.StartCollaboration:
		return t.Sessions != nil
	case catalog.ConsultSpecialist, catalog.ConsultationFollowUp, catalog.CloseConsultation, catalog.ReadConsultation:
		return t.Consultations != nil
	case catalog.FindColleagues:
		return t.Colleagues != nil
	case catalog.SummarizeText, catalog.ExtractStructuredData, catalog.CompareTexts:
		return t.Model != nil
	case catalog.ClipboardStore, catalog.ClipboardGet:
		return t.Clipboard != nil
	}
	return true
}

// offered are the specs of the tools a may call at where.
func (t *Tools) offered(a agents.Agent, where catalog.Where) []models.Tool {
	var declared []string
	for _, sk := range a.Skills {
		declared = append(declared, sk.Tools...)
	}
	var out []models.Tool
	for _, name := range catalog.Allowed(t.Flags, declared, where) {
		if t.available(name) {
			out = append(out, defs[name].spec)
		}
	}
	return out
}

// Specs implements worker.Tools.
func (t *Tools) Specs(a agents.Agent) []models.Tool { return t.offered(a, catalog.InTask) }

// caller is the agent calling a tool: working on a task, or answering in
// a conversation.
type caller struct {
	teamID, agent string
	// taskID is the task worked on ("" in a chat).
	taskID string
	// rootTaskID is the root of its delegation tree (its plan): the
	// clipboard's scope.
	rootTaskID string
	// conversationID is the chat answered in ("" working on a task).
	conversationID string
	context        string
	// waitUntil bounds a chat tool's wait for work it started; a task's
	// waits happen in its workflow instead (worker.WaitFor).
	waitUntil time.Time
	// allowed are the tools the agent was offered; nil when the caller
	// (the worker) checks that itself.
	allowed []models.Tool
	// forUser is conversations.ToolCaller.ForUser: the work is requested
	// by that user (its API key id), not by the agent.
	forUser string
}

// requester is who the work the caller starts is requested by: the agent,
// or the user whose message a kind skill turned into the call.
func (c caller) requester() tasks.Creator {
	if c.forUser != "" {
		return tasks.Creator{Type: "user", ID: c.forUser}
	}
	return tasks.Creator{Type: "agent", ID: c.agent}
}

func (c caller) inChat() bool { return c.conversationID != "" && c.taskID == "" }

// result is what a tool answered.
type result struct {
	text    string
	pending *conversations.WorkRef
	handoff *conversations.HandoffRequest
	// delivered: a chat's delegation that ended while waited for; text
	// carries its result (conversations.ToolResult.Delivered).
	delivered *conversations.WorkRef
	// pack is the tool pack a chat's request_tool_pack adds, with the
	// tools it gives there (conversations.ToolResult.Pack).
	pack      string
	packTools []models.Tool
}

func text(s string) (result, error) { return result{text: s}, nil }

// call runs a tool the caller was offered, once its arguments match its
// schema; any other is refused (a model may name a tool it was not
// given).
func (t *Tools) call(ctx context.Context, c caller, call models.ToolCall) (res result, err error) {
	// Each call is an execute_tool span (the GenAI conventions); its
	// arguments only when the stage records content.
	ctx, span := tracing.Start(ctx, "execute_tool "+call.Name, trace.SpanKindInternal,
		attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", call.Name),
		attribute.String("gen_ai.tool.call.id", call.ID), attribute.String("gen_ai.agent.name", c.agent))
	if tracing.Content(ctx) {
		span.SetAttributes(attribute.String("gen_ai.tool.call.arguments", call.Input))
	}
	defer func() { tracing.End(ctx, span, err) }()
	return t.dispatch(ctx, c, call)
}

// dispatch runs call if c was offered it.
func (t *Tools) dispatch(ctx context.Context, c caller, call models.ToolCall) (result, error) {
	d, ok := defs[call.Name]
	offered := c.allowed == nil
	for _, sp := range c.allowed {
		offered = offered || sp.Name == call.Name
	}
	if !ok && offered && t.isMCPTool(call.Name) {
		// An MCP pack's tool: the worker offered it, or the chat reply
		// was given its pack.
		return t.callMCPPack(ctx, c, call), nil
	}
	if !ok || !offered {
		return text("tool " + call.Name + " is not available to you")
	}
	// Nothing acts on arguments its schema refuses: the model reads which
	// field is wrong as the tool's result, and the task or turn goes on.
	if res, valid := d.validate(call.Input); !valid {
		return res, nil
	}
	input := call.Input
	if strings.TrimSpace(input) == "" {
		input = "{}"
	}
	return d.run(t, ctx, c, []byte(input))
}

type delegateInput struct {
	ToAgent        string `json:"to_agent" jsonschema:"slug of the colleague who does the task (a slug of your team; find_colleagues finds one)"`
	Instructions   string `json:"instructions" jsonschema:"what to do, with everything the colleague needs to know"`
	Title          string `json:"title,omitempty" jsonschema:"a short title (default: the first line of the instructions)"`
	ExpectedOutput string `json:"expected_output,omitempty" jsonschema:"what the result should contain"`
	TaskType       string `json:"task_type,omitempty" jsonschema:"the kind of work"`
	Priority       string `json:"priority,omitempty" jsonschema:"the task's priority (default normal)"`
	WaitForResult  *bool  `json:"wait_for_result,omitempty" jsonschema:"wait for the result (default true); false returns the task id at once"`
	// ToolPacks gives the colleague tool packs for this task only
	// (shared/tools/toolpacks).
	ToolPacks []string `json:"tool_packs,omitempty" jsonschema:"tool packs the colleague gets for this task only, on top of its own tools"`
	// ModelTier is the sub-task's tier (tasks.CreateInput.ModelTier).
	ModelTier string `json:"model_tier,omitempty" jsonschema:"the model tier the colleague works with: tier_0 (fast, cheap), tier_1, tier_2 (strongest), or auto (default: chosen by the sub-task's complexity); a colleague with a model of its own keeps it"`
}

func (delegateInput) constrain(c constraints) {
	c.slug("to_agent")
	c.length("instructions", 1, 20000)
	c.length("title", 0, 500)
	c.length("expected_output", 0, 20000)
	c.enum("task_type", tasks.Types...)
	c.enum("priority", tasks.Priorities...)
	c.enum("model_tier", tasks.ModelTiers...)
	packs := c.prop("tool_packs")
	packs.MaxItems, packs.UniqueItems = jsonschema.Ptr(toolpacks.MaxPerTask), true
	packs.Items.Pattern = PackPattern
}

// maxID bounds an id argument (task, report, consultation).
const maxID = 100

type taskIDInput struct {
	TaskID string `json:"task_id" jsonschema:"the id of a task you delegated (task_…)"`
}

func (taskIDInput) constrain(c constraints) { c.length("task_id", 1, maxID) }

type messageInput struct {
	ToAgent string `json:"to_agent,omitempty" jsonschema:"slug of the colleague to message (a direct message); leave out for a channel message"`
	Message string `json:"message" jsonschema:"the message"`
	Type    string `json:"message_type,omitempty" jsonschema:"what kind of message it is (default notification)"`
	Channel string `json:"channel,omitempty" jsonschema:"a channel instead of a colleague: team, task:<id> or collab:<id>"`
}

func (messageInput) constrain(c constraints) {
	c.slug("to_agent")
	c.length("message", 1, messaging.MaxContent)
	c.enum("message_type", messaging.Types...)
	c.length("channel", 1, maxID)
}

type inboxInput struct {
	UnreadOnly *bool `json:"unread_only,omitempty" jsonschema:"only the unread messages (default true)"`
}

type handoffInput struct {
	ToAgent string `json:"to_agent" jsonschema:"slug of the colleague who takes the conversation over"`
	Reason  string `json:"reason" jsonschema:"why they are better placed to help"`
	Summary string `json:"context_summary,omitempty" jsonschema:"what they need to know of the conversation so far"`
}

func (handoffInput) constrain(c constraints) {
	c.slug("to_agent")
	c.length("reason", 1, conversations.MaxReason)
	c.length("context_summary", 0, conversations.MaxSummary)
}

// Call implements worker.Tools. The worker runs only the tools it offered
// (Specs), so the call is not checked again here.
func (t *Tools) Call(ctx context.Context, p workflow.TaskInput, call models.ToolCall) (string, error) {
	c := caller{teamID: p.TeamID, agent: p.Assignee, taskID: p.TaskID, rootTaskID: p.RootTaskID, context: p.Context}
	res, err := t.call(ctx, c, call)
	return res.text, err
}

// delegate creates a delegation: working on a task, a sub-task of it;
// answering in a chat, a task linked to the conversation. Unless told not
// to wait, a task's delegation returns worker.WaitFor: the worker then
// stops and the delegation machine waits for the child (a task token,
// nothing running) and resumes the worker with the child's outcome as this
// tool's result. A chat's waits here, until the caller's waitUntil (the
// reply must still be written): a result in time is the tool's output;
// otherwise the task goes on and posts its result into the conversation.
func (t *Tools) delegate(ctx context.Context, c caller, in delegateInput) (result, error) {
	if in.Title == "" {
		in.Title = firstLine(in.Instructions)
	}
	wait := in.WaitForResult == nil || *in.WaitForResult
	create := tasks.CreateInput{
		Assignee: in.ToAgent, ParentID: c.taskID, Type: in.TaskType, Title: in.Title, Instructions: in.Instructions,
		ExpectedOutput: in.ExpectedOutput, Priority: in.Priority, ConversationID: c.conversationID, CreatedByAgent: c.agent,
		ToolPacks: in.ToolPacks, ModelTier: in.ModelTier,
	}
	if c.inChat() && wait {
		create.ResultDelivery = tasks.DeliverInReply // released to the conversation if it runs late
	}
	child, err := t.Tasks.Create(ctx, c.teamID, tasks.Creator{Type: "agent", ID: c.agent}, create, true)
	if err != nil {
		return refused(err)
	}
	worker.Produced(ctx, child.ID)
	ref := &conversations.WorkRef{Type: "task", ID: child.ID, Agent: child.Assignee, Status: string(child.Status)}
	if !wait {
		where := "check it with check_task_status"
		if c.inChat() {
			where = "its result will be posted in this conversation when it is done; check it with check_task_status"
			return result{text: fmt.Sprintf("delegated as task %s to %s; %s", child.ID, child.Assignee, where), pending: ref}, nil
		}
		return text(fmt.Sprintf("delegated as task %s to %s; %s", child.ID, child.Assignee, where))
	}
	if !c.inChat() {
		return result{}, worker.WaitFor{ChildTaskID: child.ID}
	}
	return t.awaitInChat(ctx, c, child, ref)
}

// awaitInChat waits for a task a chat reply started, until the caller's
// waitUntil. When time runs out the task is released to the conversation
// (it posts its result there when it ends); if it ended meanwhile, its
// result is the tool's after all.
func (t *Tools) awaitInChat(ctx context.Context, c caller, child tasks.Task, ref *conversations.WorkRef) (result, error) {
	ended := func(got tasks.Task) (result, error) {
		ref.Status = string(got.Status)
		return result{text: got.Outcome(), delivered: ref}, nil
	}
	if left := time.Until(c.waitUntil); left > 0 {
		got, err := t.Tasks.Wait(ctx, c.teamID, child.ID, left)
		if err == nil && got.Status.Terminal() {
			return ended(got)
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	got, err := t.Tasks.ReleaseToConversation(rctx, c.teamID, child.ID)
	if err != nil {
		return result{}, err
	}
	if got.Status.Terminal() {
		// Ended before the release: still delivered in the reply only.
		return ended(got)
	}
	ref.Status = string(got.Status)
	return result{text: fmt.Sprintf("task %s (%s) is still running; its result will be posted in this conversation when it is done. Tell the user.", child.ID, child.Assignee), pending: ref}, nil
}

func (t *Tools) checkStatus(ctx context.Context, c caller, in taskIDInput) (result, error) {
	got, err := t.Tasks.Get(ctx, c.teamID, in.TaskID)
	if err != nil {
		return refused(err)
	}
	return text(got.Outcome())
}

// nextTaskInput takes nothing: the caller's own queue is the one read.
type nextTaskInput struct{}

// nextTask starts the caller's best queued work item (tasks.NextTask, as
// POST /v1/agents/{slug}/next-task) and describes it.
func (t *Tools) nextTask(ctx context.Context, c caller, _ nextTaskInput) (result, error) {
	got, ok, err := t.Tasks.NextTask(ctx, c.teamID, c.agent, "agent:"+c.agent)
	if err != nil {
		return refused(err)
	}
	if !ok {
		return text("no queued task: your queue is empty")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "started task %s (%s priority): %s\n", got.ID, got.Priority, got.Title)
	if got.DueAt != nil {
		fmt.Fprintf(&b, "due: %s\n", got.DueAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, "instructions: %s\n", got.Instructions)
	if got.ExpectedOutput != "" {
		fmt.Fprintf(&b, "expected output: %s\n", got.ExpectedOutput)
	}
	if len(got.Input) > 0 {
		fmt.Fprintf(&b, "input: %s\n", got.Input)
	}
	return text(strings.TrimSuffix(b.String(), "\n"))
}

func (t *Tools) sendMessage(ctx context.Context, c caller, in messageInput) (result, error) {
	if t.Messages == nil {
		return text("messaging is not available")
	}
	md := map[string]any{}
	if c.taskID != "" {
		md["task_id"] = c.taskID
	}
	if c.conversationID != "" {
		md["conversation_id"] = c.conversationID
	}
	m, err := t.Messages.Send(ctx, c.teamID, c.agent, messaging.SendInput{To: in.ToAgent, Channel: in.Channel, Type: in.Type, Content: in.Message, Metadata: md})
	if err != nil {
		return refused(err)
	}
	worker.Produced(ctx, m.ID)
	return text(fmt.Sprintf("sent message %s on %s", m.ID, m.Channel))
}

func (t *Tools) inbox(ctx context.Context, c caller, in inboxInput) (result, error) {
	if t.Messages == nil {
		return text("messaging is not available")
	}
	list, _, err := t.Messages.Inbox(ctx, c.teamID, c.agent, messaging.InboxQuery{All: in.UnreadOnly != nil && !*in.UnreadOnly, Page: paging.Page{Limit: 10}})
	if err != nil {
		return refused(err)
	}
	if len(list) == 0 {
		return text("no messages")
	}
	var b strings.Builder
	for _, m := range list {
		fmt.Fprintf(&b, "[%s] %s from %s on %s: %s\n", m.CreatedAt.Format(time.RFC3339), m.Type, m.From, m.Channel, firstLine(m.Content))
	}
	return text(b.String())
}

// handoffTo asks for the conversation to move to another agent; the turn
// checks and commits it (conversations, tools.go).
func (t *Tools) handoffTo(_ context.Context, c caller, in handoffInput) (result, error) {
	if !c.inChat() {
		return text("there is no conversation to hand over")
	}
	return result{handoff: &conversations.HandoffRequest{To: strings.TrimSpace(in.ToAgent), Reason: in.Reason, Summary: in.Summary}}, nil
}

// refused is an error the agent can act on as the tool's output; any
// other is the tool's failure.
func refused(err error) (result, error) {
	if ae, ok := apperr.As(err); ok && ae.Code != apperr.EINTERNAL {
		if ae.Reason != "" {
			return text(fmt.Sprintf("rejected (%s): %s", ae.Reason, ae.Message))
		}
		return text("rejected: " + ae.Message)
	}
	return result{}, err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 120 {
		s = s[:120]
	}
	if s == "" {
		return "Delegated task"
	}
	return s
}
