// Package tasktools gives an agent its tools, working on a task (Tools, the
// worker's) or answering in a chat (Chat, the conversation's): the
// collaboration tools of the task system, delegate_task (a delegation
// linked to the task being worked on or to the conversation) and
// check_task_status, the messaging tools send_agent_message and
// get_agent_inbox, the report tools request_report and get_report,
// start_collaboration, handoff_to in a chat, and the declared memory tools
// search_memories and share_memory (each the same service as the HTTP
// API). Which tools an agent gets is the catalog's (shared/toolset): the
// stage's flags and the agent's declared tools.
package tasktools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/consultations"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/messaging"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/paging"
	"github.com/conclave-ai/conclave/shared/reports"
	"github.com/conclave-ai/conclave/shared/settings"
	"github.com/conclave-ai/conclave/shared/tasks"
	"github.com/conclave-ai/conclave/shared/toolset"
	"github.com/conclave-ai/conclave/shared/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Tools implements worker.Tools on the task, messaging and report
// services.
type Tools struct {
	// Flags are the stage's feature flags: they decide which tools exist
	// (toolset.Allowed).
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
}

var _ worker.Tools = (*Tools)(nil)

// specs describes every tool of the catalog.
var specs = map[string]models.Tool{
	toolset.DelegateTask:       {Name: toolset.DelegateTask, Description: `Delegate a sub-task to a specialist agent and (by default) wait for its result. Input: {"to_agent": slug, "title", "instructions", "expected_output", "task_type", "priority", "wait_for_result": true}`},
	toolset.CheckTaskStatus:    {Name: toolset.CheckTaskStatus, Description: `Check a task you delegated. Input: {"task_id"}`},
	toolset.SendAgentMessage:   {Name: toolset.SendAgentMessage, Description: `Send a message to another agent, or to a channel (team, task:<id>). Input: {"to_agent": slug, "message", "message_type": "notification", "channel"}`},
	toolset.GetAgentInbox:      {Name: toolset.GetAgentInbox, Description: `Read your unread messages from other agents (they are marked read). Input: {"unread_only": true}`},
	toolset.RequestReport:      {Name: toolset.RequestReport, Description: `Request a structured report from a specialist agent; returns the report id. Types: code_review, security_audit, research_summary, data_analysis, risk_assessment, performance_report, comparison, action_plan. Input: {"to_agent": slug, "report_type", "title", "parameters": {…}, "format": "markdown|json|bullet_points", "max_sections": 10, "wait_for_result": false}`},
	toolset.GetReport:          {Name: toolset.GetReport, Description: `Read a report you requested: its status and, once done, its sections. Input: {"report_id"}`},
	toolset.StartCollaboration: startCollaborationSpec,
	toolset.HandoffTo:          {Name: toolset.HandoffTo, Description: `Hand this conversation over to a colleague better placed to help: they answer the user from the next message on. Input: {"to_agent": slug, "reason", "context_summary"}`},
	toolset.SearchMemories:     {Name: toolset.SearchMemories, Description: `Search what you and the team remember (shared memories and your own). Input: {"query", "limit": 5}`},
	toolset.ConsultSpecialist:  consultSpec,
	toolset.ShareMemory:        {Name: toolset.ShareMemory, Description: `Share something the whole team should remember. Input: {"content", "type": "fact|preference|procedural|episodic"}`},
}

// offered are the specs of the tools a may call at where.
func (t *Tools) offered(a agents.Agent, where toolset.Where) []models.Tool {
	var declared []string
	for _, sk := range a.Skills {
		declared = append(declared, sk.Tools...)
	}
	var out []models.Tool
	for _, name := range toolset.Allowed(t.Flags, declared, where) {
		if name == toolset.StartCollaboration && t.Sessions == nil || name == toolset.ConsultSpecialist && t.Consultations == nil {
			continue
		}
		out = append(out, specs[name])
	}
	return out
}

// Specs implements worker.Tools.
func (t *Tools) Specs(a agents.Agent) []models.Tool { return t.offered(a, toolset.InTask) }

// caller is the agent calling a tool: working on a task, or answering in
// a conversation.
type caller struct {
	teamID, agent string
	// taskID is the task worked on ("" in a chat).
	taskID string
	// conversationID is the chat answered in ("" working on a task).
	conversationID string
	context        string
	// waitUntil bounds a chat tool's wait for work it started; a task's
	// waits happen in its workflow instead (worker.WaitFor).
	waitUntil time.Time
	// allowed are the tools the agent was offered; nil when the caller
	// (the worker) checks that itself.
	allowed []models.Tool
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
}

func text(s string) (result, error) { return result{text: s}, nil }

type tool func(context.Context, caller, []byte) (result, error)

func (t *Tools) tools() map[string]tool {
	return map[string]tool{
		toolset.DelegateTask:       t.delegate,
		toolset.CheckTaskStatus:    t.checkStatus,
		toolset.SendAgentMessage:   t.sendMessage,
		toolset.GetAgentInbox:      t.inbox,
		toolset.StartCollaboration: t.startCollaboration,
		toolset.RequestReport:      t.requestReport,
		toolset.GetReport:          t.getReport,
		toolset.HandoffTo:          t.handoffTo,
		toolset.SearchMemories:     t.searchMemories,
		toolset.ShareMemory:        t.shareMemory,
		toolset.ConsultSpecialist:  t.consult,
	}
}

// call runs a tool the caller was offered; any other is refused (a model
// may name a tool it was not given).
func (t *Tools) call(ctx context.Context, c caller, call models.ToolCall) (result, error) {
	fn, ok := t.tools()[call.Name]
	offered := c.allowed == nil
	for _, sp := range c.allowed {
		offered = offered || sp.Name == call.Name
	}
	if !ok || !offered {
		return text("tool " + call.Name + " is not available to you")
	}
	return fn(ctx, c, []byte(call.Input))
}

type delegateInput struct {
	ToAgent        string `json:"to_agent"`
	TaskType       string `json:"task_type"`
	Title          string `json:"title"`
	Instructions   string `json:"instructions"`
	ExpectedOutput string `json:"expected_output"`
	Priority       string `json:"priority"`
	WaitForResult  *bool  `json:"wait_for_result"`
}

// Call implements worker.Tools. The worker runs only the tools it offered
// (Specs), so the call is not checked again here.
func (t *Tools) Call(ctx context.Context, p workflow.TaskInput, call models.ToolCall) (string, error) {
	c := caller{teamID: p.TeamID, agent: p.Assignee, taskID: p.TaskID, context: p.Context}
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
func (t *Tools) delegate(ctx context.Context, c caller, input []byte) (result, error) {
	var in delegateInput
	if err := json.Unmarshal(input, &in); err != nil {
		return text("invalid input: " + err.Error())
	}
	if in.Title == "" {
		in.Title = firstLine(in.Instructions)
	}
	wait := in.WaitForResult == nil || *in.WaitForResult
	create := tasks.CreateInput{
		Assignee: in.ToAgent, ParentID: c.taskID, Type: in.TaskType, Title: in.Title, Instructions: in.Instructions,
		ExpectedOutput: in.ExpectedOutput, Priority: in.Priority, ConversationID: c.conversationID, CreatedByAgent: c.agent,
	}
	if c.inChat() && wait {
		create.ResultDelivery = tasks.DeliverInReply // released to the conversation if it runs late
	}
	child, err := t.Tasks.Create(ctx, c.teamID, tasks.Creator{Type: "agent", ID: c.agent}, create, true)
	if err != nil {
		return refused(err)
	}
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

func (t *Tools) checkStatus(ctx context.Context, c caller, input []byte) (result, error) {
	var in struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return text("invalid input: " + err.Error())
	}
	got, err := t.Tasks.Get(ctx, c.teamID, in.TaskID)
	if err != nil {
		return refused(err)
	}
	return text(got.Outcome())
}

func (t *Tools) sendMessage(ctx context.Context, c caller, input []byte) (result, error) {
	if t.Messages == nil {
		return text("messaging is not available")
	}
	var in struct {
		ToAgent string `json:"to_agent"`
		Message string `json:"message"`
		Type    string `json:"message_type"`
		Channel string `json:"channel"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return text("invalid input: " + err.Error())
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
	return text(fmt.Sprintf("sent message %s on %s", m.ID, m.Channel))
}

func (t *Tools) inbox(ctx context.Context, c caller, input []byte) (result, error) {
	if t.Messages == nil {
		return text("messaging is not available")
	}
	var in struct {
		UnreadOnly *bool `json:"unread_only"`
	}
	_ = json.Unmarshal(input, &in)
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
func (t *Tools) handoffTo(_ context.Context, c caller, input []byte) (result, error) {
	if !c.inChat() {
		return text("there is no conversation to hand over")
	}
	var in struct {
		ToAgent string `json:"to_agent"`
		Reason  string `json:"reason"`
		Summary string `json:"context_summary"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return text("invalid input: " + err.Error())
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
