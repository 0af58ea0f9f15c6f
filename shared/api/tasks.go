package api

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/tasks"
)

// MaxWait bounds GET /v1/tasks/{id}?wait=N below API Gateway's 30 s
// integration timeout (the function's own timeout is 29 s).
const MaxWait = 25

// decodeOptional decodes a body that may be empty.
func decodeOptional(r *httpapi.Request, v any) error {
	if strings.TrimSpace(r.Event.Body) == "" {
		return nil
	}
	return r.Decode(v)
}

func byUser(r *httpapi.Request) string { return "user:" + r.KeyID }

// TaskRoutes registers the tasks function's routes.
func TaskRoutes(rt *httpapi.Router, svc *tasks.Service) {
	rt.Handle("POST /v1/tasks", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in tasks.CreateInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		t, err := svc.Create(ctx, r.TeamID, tasks.Creator{Type: "user", ID: r.KeyID}, in, false)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.Created(t), nil
	})
	rt.Handle("POST /v1/tasks/{id}/delegate", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in tasks.CreateInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		if in.ParentID != "" && in.ParentID != r.Param("id") {
			return httpapi.Response{}, apperr.Invalid("parent_task_id", "the parent is the task in the path")
		}
		in.ParentID = r.Param("id")
		t, err := svc.Create(ctx, r.TeamID, tasks.Creator{Type: "user", ID: r.KeyID}, in, true)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.Created(t), nil
	})
	rt.Handle("GET /v1/tasks", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		p, err := r.Page()
		if err != nil {
			return httpapi.Response{}, err
		}
		f := tasks.Filter{Status: tasks.Status(r.Query("status")), Agent: r.Query("agent"), Assignee: r.Query("assignee"), Parent: r.Query("parent_task_id")}
		list, next, err := svc.List(ctx, r.TeamID, f, p)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(ListResponse[tasks.Task]{Items: list, NextToken: next}), nil
	})
	rt.Handle("GET /v1/tasks/{id}", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		wait := 0
		if w := r.Query("wait"); w != "" {
			n, err := strconv.Atoi(w)
			if err != nil || n < 0 || n > MaxWait {
				return httpapi.Response{}, apperr.Invalid("wait", "wait must be a number of seconds from 0 to %d", MaxWait)
			}
			wait = n
		}
		var t tasks.Task
		var err error
		if wait > 0 {
			t, err = svc.Wait(ctx, r.TeamID, r.Param("id"), time.Duration(wait)*time.Second)
		} else {
			t, err = svc.Get(ctx, r.TeamID, r.Param("id"))
		}
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(t), nil
	})
	rt.Handle("POST /v1/tasks/{id}/start", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		if err := decodeOptional(r, &struct{}{}); err != nil {
			return httpapi.Response{}, err
		}
		return result(svc.Start(ctx, r.TeamID, r.Param("id"), byUser(r)))
	})
	rt.Handle("POST /v1/tasks/{id}/complete", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in struct {
			Output          string   `json:"output"`
			ResultArtifacts []string `json:"result_artifacts"`
		}
		if err := decodeOptional(r, &in); err != nil {
			return httpapi.Response{}, err
		}
		return result(svc.Complete(ctx, r.TeamID, r.Param("id"), byUser(r), in.Output, in.ResultArtifacts))
	})
	rt.Handle("POST /v1/tasks/{id}/fail", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in struct {
			Reason string `json:"reason"`
		}
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		return result(svc.Fail(ctx, r.TeamID, r.Param("id"), byUser(r), in.Reason))
	})
	rt.Handle("POST /v1/tasks/{id}/block", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in struct {
			Reason string `json:"reason"`
		}
		if err := decodeOptional(r, &in); err != nil {
			return httpapi.Response{}, err
		}
		return result(svc.Block(ctx, r.TeamID, r.Param("id"), byUser(r), in.Reason))
	})
	rt.Handle("POST /v1/tasks/{id}/cancel", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in struct {
			Reason string `json:"reason"`
		}
		if err := decodeOptional(r, &in); err != nil {
			return httpapi.Response{}, err
		}
		if in.Reason == "" {
			in.Reason = "canceled by " + byUser(r)
		}
		return result(svc.Cancel(ctx, r.TeamID, r.Param("id"), byUser(r), in.Reason))
	})
	rt.Handle("POST /v1/tasks/{id}/assign", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in struct {
			Assignee string `json:"assignee"`
		}
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		return result(svc.Reassign(ctx, r.TeamID, r.Param("id"), byUser(r), in.Assignee))
	})
	rt.Handle("GET /v1/agents/{slug}/load", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		n, err := svc.Load(ctx, r.TeamID, r.Param("slug"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(map[string]any{"agent": r.Param("slug"), "active_tasks": n, "limit": tasks.MaxActivePerAgent}), nil
	})
}

func result(t tasks.Task, err error) (httpapi.Response, error) {
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(t), nil
}
