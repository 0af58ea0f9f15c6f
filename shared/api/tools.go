package api

import (
	"context"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/tools/catalog"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

// ToolLister answers which tools an agent's model receives
// (agenttools.Lister).
type ToolLister interface {
	// Offered returns EINVALID (context, skill) and ENOTFOUND (agent).
	Offered(ctx context.Context, teamID, slug, context, skill string) (catalog.Offered, error)
}

// AgentToolRoutes registers GET /v1/agents/{slug}/tools: the tools and
// input schemas an agent's model receives in a chat reply (context=chat,
// the default) or on a task (context=task) under the stage's flags; with
// skill=, those of a reply its skill of that name answered (its tools
// belong to it).
func AgentToolRoutes(rt *httpapi.Router, tools ToolLister) {
	rt.Handle("GET /v1/agents/{slug}/tools", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		where, given := r.Event.QueryStringParameters["context"]
		if given && where == "" {
			where = "(empty)" // given but empty is not the default: refused, naming context
		}
		skill, given := r.Event.QueryStringParameters["skill"]
		if given && skill == "" {
			return httpapi.Response{}, apperr.Invalid("skill", "skill, when given, names one of the agent's skills")
		}
		out, err := tools.Offered(ctx, r.TeamID, r.Param("slug"), where, skill)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(out), nil
	})
}

// ToolPacks answers the tool-pack routes (agenttools.Packs).
type ToolPacks interface {
	// List is the built-in packs, then the team's MCP packs.
	List(ctx context.Context, teamID string) (toolpacks.List, error)
	// Get returns ENOTFOUND for a pack the team does not have.
	Get(ctx context.Context, teamID, name string) (toolpacks.View, error)
	// Put registers or replaces the team's MCP pack (toolpacks.Registry.Put).
	Put(ctx context.Context, teamID, by, name string, in toolpacks.MCPPackInput) (toolpacks.View, bool, error)
	// Delete removes the team's MCP pack and its credential.
	Delete(ctx context.Context, teamID, name string) error
}

// ToolPackRoutes registers the tool-pack routes (docs/tools.md): GET
// /v1/tool-packs and GET /v1/tool-packs/{name}, the built-in packs and
// the team's MCP packs with their tools and the tools' input schemas;
// PUT /v1/tool-packs/{name}, an MCP server registered as a pack (201
// new, 200 replaced: a PUT is idempotent by itself); DELETE
// /v1/tool-packs/{name}.
func ToolPackRoutes(rt *httpapi.Router, packs ToolPacks) {
	rt.Handle("GET /v1/tool-packs", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		l, err := packs.List(ctx, r.TeamID)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(l), nil
	})
	rt.Handle("GET /v1/tool-packs/{name}", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		v, err := packs.Get(ctx, r.TeamID, r.Param("name"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(v), nil
	})
	rt.Handle("PUT /v1/tool-packs/{name}", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in toolpacks.MCPPackInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		v, created, err := packs.Put(ctx, r.TeamID, r.KeyID, r.Param("name"), in)
		if err != nil {
			return httpapi.Response{}, err
		}
		if created {
			return httpapi.Created(v), nil
		}
		return httpapi.OK(v), nil
	})
	rt.Handle("DELETE /v1/tool-packs/{name}", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		if err := packs.Delete(ctx, r.TeamID, r.Param("name")); err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.NoContent(), nil
	})
}
