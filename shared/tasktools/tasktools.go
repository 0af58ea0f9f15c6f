// Package tasktools gives a working agent the collaboration tools of the
// task system: delegate_task (a sub-delegation linked to the task being
// worked on, waiting for its result inside the parent's deadline) and
// check_task_status, the messaging tools send_agent_message and
// get_agent_inbox, and the report tools request_report and get_report
// (each the same service as the HTTP API).
package tasktools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/messaging"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/paging"
	"github.com/conclave-ai/conclave/shared/reports"
	"github.com/conclave-ai/conclave/shared/tasks"
	"github.com/conclave-ai/conclave/shared/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Tools implements worker.Tools on the task, messaging and report
// services.
type Tools struct {
	Tasks    *tasks.Service
	Messages *messaging.Service
	// Sessions starts collaboration sessions (start_collaboration); nil
	// leaves the tool out.
	Sessions SessionStarter
	// Reports serves request_report and get_report; nil answers them
	// "not available".
	Reports *reports.Service
}

var _ worker.Tools = (*Tools)(nil)

// Specs implements worker.Tools.
func (t *Tools) Specs() []models.Tool {
	specs := []models.Tool{
		{Name: "delegate_task", Description: `Delegate a sub-task to a specialist agent and (by default) wait for its result. Input: {"to_agent": slug, "title", "instructions", "expected_output", "task_type", "priority", "wait_for_result": true}`},
		{Name: "check_task_status", Description: `Check a task you delegated. Input: {"task_id"}`},
		{Name: "send_agent_message", Description: `Send a message to another agent, or to a channel (team, task:<id>). Input: {"to_agent": slug, "message", "message_type": "notification", "channel"}`},
		{Name: "get_agent_inbox", Description: `Read your unread messages from other agents (they are marked read). Input: {"unread_only": true}`},
		{Name: "request_report", Description: `Request a structured report from a specialist agent; returns the report id. Types: code_review, security_audit, research_summary, data_analysis, risk_assessment, performance_report, comparison, action_plan. Input: {"to_agent": slug, "report_type", "title", "parameters": {…}, "format": "markdown|json|bullet_points", "max_sections": 10, "wait_for_result": false}`},
		{Name: "get_report", Description: `Read a report you requested: its status and, once done, its sections. Input: {"report_id"}`},
	}
	if t.Sessions != nil {
		specs = append(specs, startCollaborationSpec)
	}
	return specs
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

// Call implements worker.Tools. Errors the agent can act on (a rejected
// delegation, an unknown task) come back as the tool's output so the model
// can adapt; only infrastructure failures are errors.
func (t *Tools) Call(ctx context.Context, p workflow.TaskInput, call models.ToolCall) (string, error) {
	tool, ok := map[string]func(context.Context, workflow.TaskInput, []byte) (string, error){
		"delegate_task":       t.delegate,
		"check_task_status":   t.checkStatus,
		"send_agent_message":  t.sendMessage,
		"get_agent_inbox":     t.inbox,
		"start_collaboration": t.startCollaboration,
		"request_report":      t.requestReport,
		"get_report":          t.getReport,
	}[call.Name]
	if !ok {
		return "unknown tool " + call.Name, nil
	}
	return tool(ctx, p, []byte(call.Input))
}

// delegate creates a sub-delegation linked to the task being worked on.
// Unless told not to wait, it returns worker.WaitFor: the worker then stops
// and the delegation machine waits for the child (a task token, nothing
// running) and resumes the worker with the child's outcome as this tool's
// result.
func (t *Tools) delegate(ctx context.Context, p workflow.TaskInput, input []byte) (string, error) {
	var in delegateInput
	if err := json.Unmarshal(input, &in); err != nil {
		return "invalid input: " + err.Error(), nil
	}
	if in.Title == "" {
		in.Title = firstLine(in.Instructions)
	}
	child, err := t.Tasks.Create(ctx, p.TeamID, tasks.Creator{Type: "agent", ID: p.Assignee}, tasks.CreateInput{
		Assignee: in.ToAgent, ParentID: p.TaskID, Type: in.TaskType, Title: in.Title, Instructions: in.Instructions,
		ExpectedOutput: in.ExpectedOutput, Priority: in.Priority,
	}, true)
	if err != nil {
		return rejected(err)
	}
	if in.WaitForResult != nil && !*in.WaitForResult {
		return fmt.Sprintf("delegated as task %s to %s; check it with check_task_status", child.ID, child.Assignee), nil
	}
	return "", worker.WaitFor{ChildTaskID: child.ID}
}

func (t *Tools) checkStatus(ctx context.Context, p workflow.TaskInput, input []byte) (string, error) {
	var in struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return "invalid input: " + err.Error(), nil
	}
	got, err := t.Tasks.Get(ctx, p.TeamID, in.TaskID)
	if err != nil {
		return rejected(err)
	}
	return got.Outcome(), nil
}

func (t *Tools) sendMessage(ctx context.Context, p workflow.TaskInput, input []byte) (string, error) {
	if t.Messages == nil {
		return "messaging is not available", nil
	}
	var in struct {
		ToAgent string `json:"to_agent"`
		Message string `json:"message"`
		Type    string `json:"message_type"`
		Channel string `json:"channel"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return "invalid input: " + err.Error(), nil
	}
	m, err := t.Messages.Send(ctx, p.TeamID, p.Assignee, messaging.SendInput{To: in.ToAgent, Channel: in.Channel, Type: in.Type, Content: in.Message,
		Metadata: map[string]any{"task_id": p.TaskID}})
	if err != nil {
		return rejected(err)
	}
	return fmt.Sprintf("sent message %s on %s", m.ID, m.Channel), nil
}

func (t *Tools) inbox(ctx context.Context, p workflow.TaskInput, input []byte) (string, error) {
	if t.Messages == nil {
		return "messaging is not available", nil
	}
	var in struct {
		UnreadOnly *bool `json:"unread_only"`
	}
	_ = json.Unmarshal(input, &in)
	list, _, err := t.Messages.Inbox(ctx, p.TeamID, p.Assignee, messaging.InboxQuery{All: in.UnreadOnly != nil && !*in.UnreadOnly, Page: paging.Page{Limit: 10}})
	if err != nil {
		return rejected(err)
	}
	if len(list) == 0 {
		return "no messages", nil
	}
	var b strings.Builder
	for _, m := range list {
		fmt.Fprintf(&b, "[%s] %s from %s on %s: %s\n", m.CreatedAt.Format(time.RFC3339), m.Type, m.From, m.Channel, firstLine(m.Content))
	}
	return b.String(), nil
}

func rejected(err error) (string, error) {
	if ae, ok := apperr.As(err); ok && ae.Code != apperr.EINTERNAL {
		if ae.Reason != "" {
			return fmt.Sprintf("rejected (%s): %s", ae.Reason, ae.Message), nil
		}
		return "rejected: " + ae.Message, nil
	}
	return "", err
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
