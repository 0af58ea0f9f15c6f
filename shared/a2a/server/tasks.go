package server

import (
	"encoding/json"
	"errors"
	"maps"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// State is the A2A state of a Conclave task (docs/a2a.md has the table):
// a task that waits for a human's approval of one of its own tool calls
// is the one that needs input from the client; any other blocked task (a
// parent whose sub-task waits for an approval included: the sub-task is
// the one to decide) is still working.
func State(t tasks.Task) a2a.TaskState {
	switch t.Status {
	case tasks.Queued:
		return a2a.TaskStateSubmitted
	case tasks.Blocked:
		if t.StatusReason == tasks.ReasonAwaitingApproval && len(t.ApprovalIDs) > 0 {
			return a2a.TaskStateInputRequired
		}
		return a2a.TaskStateWorking
	case tasks.Completed:
		return a2a.TaskStateCompleted
	case tasks.Failed, tasks.TimedOut:
		return a2a.TaskStateFailed
	case tasks.Canceled:
		return a2a.TaskStateCanceled
	default: // running
		return a2a.TaskStateWorking
	}
}

// AnswerArtifact is the id of the artifact that holds a task's answer.
const AnswerArtifact = "answer"

// Task is t as an A2A task: its status (with the error of a failed task,
// or what an approval needs), the answer as its artifact (text, and the
// structured output as a data part), and, unless historyLength is 0, the
// message that asked for it. Remote text is the client's: it is data here,
// as it is in the task model.
func Task(t tasks.Task, historyLength *int) *a2a.Task {
	at := t.UpdatedAt
	out := &a2a.Task{
		ID: a2a.TaskID(t.ID), ContextID: t.ConversationID,
		Status: a2a.TaskStatus{State: State(t), Timestamp: &at},
		Metadata: map[string]any{
			"conclave_status": string(t.Status), "assignee": t.Assignee, "tokens_used": t.TokensUsed, "cost_usd": t.CostUSD,
		},
	}
	switch out.Status.State {
	case a2a.TaskStateFailed:
		msg := t.Error
		if t.Status == tasks.TimedOut {
			msg = "the task timed out: " + msg
		}
		out.Status.Message = agentMessage(t, msg)
	case a2a.TaskStateInputRequired:
		out.Status.Message = agentMessage(t, "A tool call of this task waits for an approval. Send a message to this task "+
			`with a data part {"decision": "approve" | "reject", "arguments"?: {…}, "reason"?: "…"}.`)
	}
	if t.Status == tasks.Completed {
		parts := a2a.ContentParts{a2a.NewTextPart(t.Result)}
		if len(t.Output) > 0 {
			var v any
			if json.Unmarshal(t.Output, &v) == nil {
				parts = append(parts, a2a.NewDataPart(v))
			}
		}
		out.Artifacts = []*a2a.Artifact{{ID: AnswerArtifact, Name: AnswerArtifact, Parts: parts}}
	}
	if historyLength == nil || *historyLength > 0 {
		out.History = []*a2a.Message{{
			ID: t.ID + "-request", ContextID: t.ConversationID, TaskID: a2a.TaskID(t.ID), Role: a2a.MessageRoleUser,
			Parts: a2a.ContentParts{a2a.NewTextPart(t.Instructions)},
		}}
	}
	return out
}

func agentMessage(t tasks.Task, text string) *a2a.Message {
	return &a2a.Message{
		ID: t.ID + "-status", ContextID: t.ConversationID, TaskID: a2a.TaskID(t.ID), Role: a2a.MessageRoleAgent,
		Parts: a2a.ContentParts{a2a.NewTextPart(text)},
	}
}

// protocolError is err as an A2A error: a JSON-RPC error object whose
// data carries the Conclave code, reason, field and details (a limit
// refusal names its limit as every route's error does).
func protocolError(err error) error {
	if err == nil {
		return nil
	}
	var already *a2a.Error
	if errors.As(err, &already) {
		return err
	}
	e, ok := apperr.As(err)
	if !ok {
		return a2a.NewError(a2a.ErrInternalError, "internal error")
	}
	details := map[string]any{"code": e.Code}
	if e.Reason != "" {
		details["reason"] = e.Reason
	}
	if e.Field != "" {
		details["field"] = e.Field
	}
	if len(e.Details) > 0 {
		details["details"] = maps.Clone(e.Details)
	}
	kind := a2a.ErrInternalError
	msg := e.Message
	switch e.Code {
	case apperr.ENOTFOUND:
		kind = a2a.ErrTaskNotFound
	case apperr.EINVALID, apperr.ETOOLARGE:
		kind = a2a.ErrInvalidParams
	case apperr.ECONFLICT, apperr.ELIMIT, apperr.EREJECTED:
		kind = a2a.ErrUnsupportedOperation
	case apperr.EUNAUTHORIZED:
		kind = a2a.ErrUnauthenticated
	case apperr.EUPSTREAM, apperr.EUNAVAILABLE:
		kind = a2a.ErrServerError
	default:
		msg = "internal error" // details stay in the logs
		delete(details, "details")
	}
	return a2a.NewError(kind, msg).WithDetails(details)
}
