// Package streamsfn wires the "streams" function: the streaming API's
// routes (docs/streaming.md). A streamed turn runs on the chat service as
// the conversations function wires it (conversationsfn.Service); the event
// streams read the table's stream items.
package streamsfn

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/api/streamsapi"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/store/conversationstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/planstore"
	"github.com/conclave-ai/conclave/shared/store/sessionstore"
	"github.com/conclave-ai/conclave/shared/wire/conversationsfn"
)

// Build wires the function: its handler is a lambdafn.Streamer that
// names the stage's listed origins to browsers (AllowOrigins).
func Build(d lambdafn.Deps) (any, error) {
	rt, err := Router(d)
	if err != nil {
		return nil, err
	}
	return lambdafn.Streamer(rt.ServeStream).AllowOrigins(d.Config.CORSOrigins), nil
}

// Router is the function's router (tests compare its routes with the
// manifest's).
func Router(d lambdafn.Deps) (*httpapi.Router, error) {
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	rt := httpapi.NewStreamRouter(d.Log)
	rt.Bodies = api.BodyRoutes()
	chat, err := conversationsfn.Service(d, core)
	if err != nil {
		return nil, err
	}
	streamsapi.TurnRoute(rt, chat, TurnLimit())
	conv := conversationstore.New(core.DB, core.Table)
	ses := sessionstore.New(core.DB, core.Table)
	pl := planstore.New(core.DB, core.Table)
	streamsapi.EventRoutes(rt, core,
		streamsapi.Stream{Route: "GET /v1/conversations/{id}/events", Name: streams.Conversation, FromNow: true,
			Run: func(ctx context.Context, teamID, id string) (bool, error) {
				// A conversation never ends: a closed one still takes the
				// results of work it started.
				// Another member's is not found, as on every
				// conversation route (conversations.Visible).
				c, err := conv.GetConversation(ctx, teamID, id)
				if err == nil && !conversations.Visible(ctx, c) {
					err = apperr.NotFound("conversation", id)
				}
				return false, err
			}},
		streamsapi.Stream{Route: "GET /v1/sessions/{id}/events", Name: streams.Session,
			Run: func(ctx context.Context, teamID, id string) (bool, error) {
				s, err := ses.GetSession(ctx, teamID, id)
				if err == nil {
					err = reach(ctx, s.UserID, "session", id)
				}
				return s.Status.Terminal(), err
			}},
		streamsapi.Stream{Route: "GET /v1/plans/{id}/events", Name: streams.Plan,
			Run: func(ctx context.Context, teamID, id string) (bool, error) {
				p, err := pl.GetPlan(ctx, teamID, id)
				if err == nil {
					err = reach(ctx, p.UserID, "plan", id)
				}
				return p.Status.Terminal(), err
			}},
	)
	for _, key := range rt.RouteKeys() {
		if flag, gated := manifest.RouteFlags[key]; gated && !d.Config.Flags.On(flag) {
			rt.Disable(key, flag)
		}
	}
	return rt, nil
}

// reach is ENOTFOUND when ctx's caller is a member and userID, the person
// who started the session or plan, is someone else: the stream of another
// person's work is not found, as its GET is (api.Reach).
func reach(ctx context.Context, userID, kind, id string) error {
	if c := authctx.CallerOf(ctx); c.Member() && c.UserID != userID {
		return apperr.NotFound(kind, id)
	}
	return nil
}

// TurnLimit is a streamed turn's deadline: the conversations function's,
// less the answer's reserve, as a turn on the HTTP API has it.
func TurnLimit() time.Duration {
	f, _ := manifest.Lookup("conversations")
	return time.Duration(f.Timeout)*time.Second - httpapi.AnswerReserve
}
