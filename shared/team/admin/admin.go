// Package admin is the operator's entry point, invoked directly (never through
// the HTTP API): it creates teams and manages their keys for a stage. The
// admin CLI (infra/admin) calls it with the Lambda Invoke API, so the same
// command works against the local cloud and a deployed stage.
package admin

import (
	"context"
	"log/slog"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// Actions.
const (
	ActionCreateTeam = "create-team"
	ActionIssueKey   = "issue-key"
	ActionRotateKey  = "rotate-key"
	ActionRevokeKey  = "revoke-key"
	ActionListKeys   = "list-keys"
)

// Request is the invocation payload.
type Request struct {
	Action  string `json:"action"`
	Name    string `json:"name,omitempty"`
	TeamID  string `json:"team_id,omitempty"`
	KeyID   string `json:"key_id,omitempty"`
	KeyName string `json:"key_name,omitempty"`
	// ActAsUsers issues the key with act_as_users (issue-key only).
	ActAsUsers bool `json:"act_as_users,omitempty"`
}

// Response is the invocation result. Error is set instead of failing the
// invocation for client mistakes, so the CLI can print it.
type Response struct {
	Team  *teams.Team      `json:"team,omitempty"`
	Key   *teams.IssuedKey `json:"key,omitempty"`
	Keys  []teams.APIKey   `json:"keys,omitempty"`
	Error *ErrorBody       `json:"error,omitempty"`
}

// ErrorBody mirrors the API's error shape.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Handler runs admin actions.
type Handler struct {
	Teams *teams.Service
	Log   *slog.Logger
}

// Handle implements the function.
func (h *Handler) Handle(ctx context.Context, req Request) (Response, error) {
	// Every line of the action, the services' too, says which and whose
	// (shared/platform/logctx); a team being created has no id yet.
	ctx = logctx.With(ctx, "action", req.Action)
	if req.TeamID != "" {
		ctx = logctx.With(ctx, "team_id", req.TeamID)
	}
	resp, err := h.do(ctx, req)
	if err != nil {
		e, ok := apperr.As(err)
		if !ok || e.Code == apperr.EINTERNAL {
			h.Log.ErrorContext(ctx, "admin action failed", "error", err.Error())
			return Response{}, err
		}
		return Response{Error: &ErrorBody{Code: e.Code, Message: e.Message}}, nil
	}
	if req.TeamID == "" && resp.Team != nil {
		ctx = logctx.With(ctx, "team_id", resp.Team.ID)
	}
	h.Log.InfoContext(ctx, "admin action")
	return resp, nil
}

func (h *Handler) do(ctx context.Context, req Request) (Response, error) {
	switch req.Action {
	case ActionCreateTeam:
		t, k, err := h.Teams.CreateTeam(ctx, req.Name)
		if err != nil {
			return Response{}, err
		}
		return Response{Team: &t, Key: &k}, nil
	case ActionIssueKey:
		name := req.KeyName
		if name == "" {
			name = "admin"
		}
		if _, err := h.Teams.Store.GetTeam(ctx, req.TeamID); err != nil {
			return Response{}, err
		}
		k, err := h.Teams.IssueKey(ctx, req.TeamID, teams.KeySpec{Name: name, ActAsUsers: req.ActAsUsers})
		if err != nil {
			return Response{}, err
		}
		return Response{Key: &k}, nil
	case ActionRotateKey:
		k, err := h.Teams.RotateKey(ctx, req.TeamID, req.KeyID)
		if err != nil {
			return Response{}, err
		}
		return Response{Key: &k}, nil
	case ActionRevokeKey:
		k, err := h.Teams.RevokeKey(ctx, req.TeamID, req.KeyID)
		if err != nil {
			return Response{}, err
		}
		return Response{Keys: []teams.APIKey{k}}, nil
	case ActionListKeys:
		keys, err := h.Teams.Store.ListAPIKeys(ctx, req.TeamID)
		if err != nil {
			return Response{}, err
		}
		return Response{Keys: keys}, nil
	}
	return Response{}, apperr.Invalid("action", "unknown action %q", req.Action)
}
