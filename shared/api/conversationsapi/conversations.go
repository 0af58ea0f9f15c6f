package conversationsapi

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/ids"
)

// ConversationRoutes registers the conversations function's routes: the
// conversations (by agent too), the work each started and their closing
// here, their messages (chat turns and
// feedback) in messageRoutes, handoffs in handoffRoutes.
func ConversationRoutes(rt *httpapi.Router, svc *conversations.Service) {
	handoffRoutes(rt, svc)
	messageRoutes(rt, svc)
	rt.Handle("POST /v1/conversations", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in conversations.CreateInput
		if err := api.DecodeOptional(r, &in); err != nil {
			return httpapi.Response{}, err
		}
		c, err := svc.Create(ctx, r.TeamID, in)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.Created(c), nil
	})
	rt.Handle("GET /v1/conversations", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		p, err := r.Page()
		if err != nil {
			return httpapi.Response{}, err
		}
		var list []conversations.Conversation
		var next string
		owner := r.Query("owner")
		if r.HasQuery("owner") && (owner == "" || r.Query("agent") != "") {
			return httpapi.Response{}, apperr.Invalid("owner", "owner must be a user id, and cannot be combined with agent")
		}
		// ?agent=<slug>: the conversations it took part in (empty: all);
		// ?owner=<user id>: the ones that person started. A member's
		// listing is their own whatever they ask (the service).
		if agent := r.Query("agent"); agent != "" {
			list, next, err = svc.AgentConversations(ctx, r.TeamID, agent, p)
		} else {
			list, next, err = svc.List(ctx, r.TeamID, owner, p)
		}
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(api.ListResponse[conversations.Conversation]{Items: list, NextToken: next}), nil
	})
	rt.Handle("GET /v1/conversations/{id}", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		c, err := svc.Get(ctx, r.TeamID, r.Param("id"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(c), nil
	})
	rt.Handle("GET /v1/conversations/{id}/work", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		p, err := r.Page()
		if err != nil {
			return httpapi.Response{}, err
		}
		list, next, err := svc.Work(ctx, r.TeamID, r.Param("id"), p)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(api.ListResponse[conversations.WorkEntry]{Items: list, NextToken: next}), nil
	})
	rt.Handle("POST /v1/conversations/{id}/close", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		c, err := svc.Close(ctx, r.TeamID, r.Param("id"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(c), nil
	})
}

// messageRoutes registers a conversation's messages: the long-poll read,
// the chat turn and the feedback on a reply.
func messageRoutes(rt *httpapi.Router, svc *conversations.Service) {
	rt.Handle("GET /v1/conversations/{id}/messages", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		p, err := r.Page()
		if err != nil {
			return httpapi.Response{}, err
		}
		after, wait, err := afterWait(r)
		if err != nil {
			return httpapi.Response{}, err
		}
		var list []conversations.Message
		var next string
		if after != "" {
			list, next, err = svc.MessagesAfter(ctx, r.TeamID, r.Param("id"), after, wait, p)
		} else {
			list, next, err = svc.Messages(ctx, r.TeamID, r.Param("id"), p)
		}
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(api.ListResponse[conversations.Message]{Items: list, NextToken: next}), nil
	})
	rt.Handle("POST /v1/conversations/{id}/messages", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in conversations.PostInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		in.UserKey = api.Actor(r)
		res, err := svc.Post(idempotency.Scope(ctx, conversations.RefKind), r.TeamID, r.Param("id"), in)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.Created(res), nil
	})
	rt.Handle("POST /v1/conversations/{id}/messages/{message_id}/feedback", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in conversations.RateInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		f, err := svc.Rate(ctx, r.TeamID, r.Param("id"), r.Param("message_id"), in)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(f), nil
	})
}

// afterWait reads the long-poll's parameters of GET …/messages: after (a
// message id; empty without the long-poll) and wait (whole seconds, 0 to
// conversations.MaxWait, only with after).
func afterWait(r *httpapi.Request) (string, time.Duration, error) {
	after := r.Query("after")
	if r.HasQuery("after") && !ids.Valid("msg", after) {
		return "", 0, apperr.Invalid("after", "after must be a message id (msg_…)")
	}
	if !r.HasQuery("wait") {
		return after, 0, nil
	}
	wait, err := r.Wait(conversations.MaxWait)
	if err != nil {
		return "", 0, err
	}
	if after == "" {
		return "", 0, apperr.Invalid("wait", "wait needs after: the id of the last message the client has")
	}
	return after, wait, nil
}
