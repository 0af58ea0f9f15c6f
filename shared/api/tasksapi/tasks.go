package tasksapi

import (
	"context"
	"encoding/json"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// TaskRoutes registers the tasks function's routes.
func TaskRoutes(rt *httpapi.Router, svc *tasks.Service) {
	h := taskHandlers{svc}
	rt.Handle("POST /v1/tasks", h.create)
	rt.Handle("POST /v1/tasks/{id}/delegate", h.delegate)
	rt.Handle("GET /v1/tasks", h.list)
	rt.Handle("GET /v1/tasks/{id}", h.get)
	rt.Handle("POST /v1/tasks/{id}/start", h.start)
	rt.Handle("POST /v1/tasks/{id}/complete", h.complete)
	rt.Handle("POST /v1/tasks/{id}/fail", h.fail)
	rt.Handle("POST /v1/tasks/{id}/block", h.withReason(svc.Block))
	rt.Handle("POST /v1/tasks/{id}/cancel", h.withReason(func(ctx context.Context, teamID, id, by, reason string) (tasks.Task, error) {
		if reason == "" {
			reason = "canceled by " + by
		}
		return svc.Cancel(ctx, teamID, id, by, reason)
	}))
	rt.Handle("POST /v1/tasks/{id}/assign", h.assign)
	rt.Handle("GET /v1/agents/{slug}/load", h.load)
	rt.Handle("POST /v1/agents/{slug}/next-task", h.nextTask)
	BoardPolicyRoutes(rt, svc)
}

// taskHandlers are the tasks function's route handlers.
type taskHandlers struct{ svc *tasks.Service }

func created(t tasks.Task, err error) (httpapi.Response, error) {
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.Created(t), nil
}

func result(t tasks.Task, err error) (httpapi.Response, error) {
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(t), nil
}

func (h taskHandlers) create(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var in tasks.CreateInput
	if err := r.Decode(&in); err != nil {
		return httpapi.Response{}, err
	}
	return created(h.svc.Create(idempotency.Scope(ctx, tasks.RefKind), r.TeamID, tasks.Creator{Type: "user", ID: api.Actor(r)}, in, false))
}

func (h taskHandlers) delegate(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var in tasks.CreateInput
	if err := r.Decode(&in); err != nil {
		return httpapi.Response{}, err
	}
	if in.ParentID != "" && in.ParentID != r.Param("id") {
		return httpapi.Response{}, apperr.Invalid("parent_task_id", "the parent is the task in the path")
	}
	in.ParentID = r.Param("id")
	return created(h.svc.Create(ctx, r.TeamID, tasks.Creator{Type: "user", ID: api.Actor(r)}, in, true))
}

func (h taskHandlers) list(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	p, err := r.Page()
	if err != nil {
		return httpapi.Response{}, err
	}
	f := tasks.Filter{Status: tasks.Status(r.Query("status")), Agent: r.Query("agent"), Assignee: r.Query("assignee"), Parent: r.Query("parent_task_id"),
		ConversationID: r.Query("conversation_id"), Sort: r.Query("sort"), UserID: api.OwnUser(r)}
	list, next, err := h.svc.List(ctx, r.TeamID, f, p)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(api.ListResponse[tasks.Task]{Items: list, NextToken: next}), nil
}

// get long-polls with ?wait=N (seconds, at most MaxWait) until the task is
// terminal.
func (h taskHandlers) get(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	wait, err := r.Wait(api.MaxWait)
	if err != nil {
		return httpapi.Response{}, err
	}
	if r.Caller.Member() || wait == 0 {
		// A member's task is read (and checked: api.Reach) before any wait.
		t, err := h.svc.Get(ctx, r.TeamID, r.Param("id"))
		if err == nil {
			err = api.Reach(r, t.UserID, "task", r.Param("id"))
		}
		if err != nil || wait == 0 {
			return result(t, err)
		}
	}
	return result(h.svc.Wait(ctx, r.TeamID, r.Param("id"), wait))
}

func (h taskHandlers) start(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	return result(h.svc.Start(ctx, r.TeamID, r.Param("id"), api.ByUser(r)))
}

func (h taskHandlers) complete(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var in tasks.CompleteInput
	if err := api.DecodeOptional(r, &in); err != nil {
		return httpapi.Response{}, err
	}
	return result(h.svc.CompleteWith(ctx, r.TeamID, r.Param("id"), api.ByUser(r), in))
}

// fail takes a required body: the reason, and an optional JSON output.
func (h taskHandlers) fail(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var in struct {
		Reason string          `json:"reason"`
		Output json.RawMessage `json:"output"`
	}
	if err := r.Decode(&in); err != nil {
		return httpapi.Response{}, err
	}
	return result(h.svc.FailWith(ctx, r.TeamID, r.Param("id"), api.ByUser(r), in.Reason, in.Output))
}

// withReason serves a verb whose body, optional, is {"reason": …}.
func (h taskHandlers) withReason(verb func(ctx context.Context, teamID, id, by, reason string) (tasks.Task, error)) httpapi.HandlerFunc {
	return func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in struct {
			Reason string `json:"reason"`
		}
		if err := api.DecodeOptional(r, &in); err != nil {
			return httpapi.Response{}, err
		}
		return result(verb(ctx, r.TeamID, r.Param("id"), api.ByUser(r), in.Reason))
	}
}

func (h taskHandlers) assign(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var in struct {
		Assignee string `json:"assignee"`
	}
	if err := r.Decode(&in); err != nil {
		return httpapi.Response{}, err
	}
	return result(h.svc.Reassign(ctx, r.TeamID, r.Param("id"), api.ByUser(r), in.Assignee))
}

func (h taskHandlers) load(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	n, err := h.svc.Load(ctx, r.TeamID, r.Param("slug"))
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(map[string]any{
		"agent": r.Param("slug"), "active_tasks": n.Active, "limit": tasks.MaxActivePerAgent,
		"queued_work_items": n.Queued, "queue_limit": tasks.MaxQueuedPerAgent,
	}), nil
}

// nextTask starts the agent's best queued work item: 200 with it, or 204
// when the agent's queue is empty.
func (h taskHandlers) nextTask(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	t, ok, err := h.svc.NextTask(ctx, r.TeamID, r.Param("slug"), api.ByUser(r))
	if err != nil || !ok {
		return httpapi.NoContent(), err
	}
	return httpapi.OK(t), nil
}
