package api

import (
	"context"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/ids"

	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/discovery"
	"github.com/conclave-ai/conclave/shared/httpapi"
)

// ConversationRoutes registers the conversations function's routes: the
// conversations, chat turns, feedback and closing.
//
// Kept whole: the function's routes read as one table, each handler a few
// lines.
func ConversationRoutes(rt *httpapi.Router, svc *conversations.Service) {
	handoffRoutes(rt, svc)
	rt.Handle("POST /v1/conversations", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in conversations.CreateInput
		if err := decodeOptional(r, &in); err != nil {
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
		list, next, err := svc.List(ctx, r.TeamID, p)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(ListResponse[conversations.Conversation]{Items: list, NextToken: next}), nil
	})
	rt.Handle("GET /v1/conversations/{id}", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		c, err := svc.Get(ctx, r.TeamID, r.Param("id"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(c), nil
	})
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
		return httpapi.OK(ListResponse[conversations.Message]{Items: list, NextToken: next}), nil
	})
	rt.Handle("POST /v1/conversations/{id}/messages", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in conversations.PostInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		res, err := svc.Post(ctx, r.TeamID, r.Param("id"), in)
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
	rt.Handle("POST /v1/conversations/{id}/close", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		c, err := svc.Close(ctx, r.TeamID, r.Param("id"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(c), nil
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

func csv(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// DiscoveryRoutes registers the discovery function's routes.
func DiscoveryRoutes(rt *httpapi.Router, svc *discovery.Service) {
	rt.Handle("GET /v1/agents/recommend", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		list, err := svc.Recommend(ctx, r.TeamID, r.Query("query"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(ListResponse[discovery.Recommendation]{Items: list}), nil
	})
	rt.Handle("GET /v1/agents/experts", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		list, err := svc.FindExperts(ctx, r.TeamID, csv(r.Query("skills")), csv(r.Query("exclude")))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(ListResponse[discovery.Expert]{Items: list}), nil
	})
	rt.Handle("GET /v1/agents/{slug}/availability", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		a, err := svc.Availability(ctx, r.TeamID, r.Param("slug"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(a), nil
	})
}
