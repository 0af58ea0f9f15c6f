package api

import (
	"context"

	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/toolpacks"
	"github.com/conclave-ai/conclave/shared/toolset"
)

// ToolLister answers which tools an agent's model receives
// (tasktools.Lister).
type ToolLister interface {
	// Offered returns EINVALID (context) and ENOTFOUND (agent).
	Offered(ctx context.Context, teamID, slug, context string) (toolset.Offered, error)
}

// AgentToolRoutes registers GET /v1/agents/{slug}/tools: the tools and
// input schemas an agent's model receives in a chat reply (context=chat,
// the default) or on a task (context=task) under the stage's flags.
func AgentToolRoutes(rt *httpapi.Router, tools ToolLister) {
	rt.Handle("GET /v1/agents/{slug}/tools", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		where, given := r.Event.QueryStringParameters["context"]
		if given && where == "" {
			where = "(empty)" // given but empty is not the default: refused, naming context
		}
		out, err := tools.Offered(ctx, r.TeamID, r.Param("slug"), where)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(out), nil
	})
}

// ToolPacks answers the tool-pack routes (tasktools.Packs).
type ToolPacks interface {
	List(ctx context.Context) toolpacks.List
	// Get returns ENOTFOUND for a pack that does not exist.
	Get(ctx context.Context, name string) (toolpacks.View, error)
}

// ToolPackRoutes registers GET /v1/tool-packs and GET
// /v1/tool-packs/{name}: the built-in packs with their tools and the
// tools' input schemas (docs/tools.md). They are the same for every team;
// the routes are authorized as every route is.
func ToolPackRoutes(rt *httpapi.Router, packs ToolPacks) {
	rt.Handle("GET /v1/tool-packs", func(ctx context.Context, _ *httpapi.Request) (httpapi.Response, error) {
		return httpapi.OK(packs.List(ctx)), nil
	})
	rt.Handle("GET /v1/tool-packs/{name}", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		v, err := packs.Get(ctx, r.Param("name"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(v), nil
	})
}
