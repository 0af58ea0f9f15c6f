package agenttools

import (
	"context"
	"encoding/json"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/tools/catalog"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

// Packs answers the tool-pack routes: the built-in packs with each tool's
// description and the very schema its model receives (the catalog's),
// whatever the stage's flags (a tool whose flag is off is not given, pack
// or not: its flag is shown), then the team's MCP packs (MCPPacks) with
// their tools as a model is offered them.
type Packs struct {
	// MCPPacks is the team's MCP packs; nil serves the built-in packs only.
	MCPPacks *toolpacks.Registry
}

// List returns every pack the team may name.
func (p Packs) List(ctx context.Context, teamID string) (toolpacks.List, error) {
	out := toolpacks.List{ToolPacks: []toolpacks.View{}}
	for _, b := range toolpacks.Builtin {
		out.ToolPacks = append(out.ToolPacks, view(b))
	}
	if p.MCPPacks == nil {
		return out, nil
	}
	own, err := p.MCPPacks.List(ctx, teamID)
	if err != nil {
		return toolpacks.List{}, err
	}
	for _, r := range own {
		out.ToolPacks = append(out.ToolPacks, mcpPackView(r))
	}
	return out, nil
}

// Get returns pack name. Returns ENOTFOUND for a pack the team does not
// have.
func (p Packs) Get(ctx context.Context, teamID, name string) (toolpacks.View, error) {
	if b, err := toolpacks.Get(name); err == nil {
		return view(b), nil
	}
	if p.MCPPacks == nil {
		return toolpacks.View{}, apperr.NotFound("tool pack", name)
	}
	r, err := p.MCPPacks.Get(ctx, teamID, name)
	if err != nil {
		return toolpacks.View{}, err
	}
	return mcpPackView(r), nil
}

// Put registers or replaces an MCP pack.
func (p Packs) Put(ctx context.Context, teamID, by, name string, in toolpacks.MCPPackInput) (toolpacks.View, bool, error) {
	if p.MCPPacks == nil {
		return toolpacks.View{}, false, apperr.New(apperr.EREJECTED, "MCP packs are not served here")
	}
	r, created, err := p.MCPPacks.Put(ctx, teamID, by, name, in)
	if err != nil {
		return toolpacks.View{}, false, err
	}
	return mcpPackView(r), created, nil
}

// Delete removes an MCP pack.
func (p Packs) Delete(ctx context.Context, teamID, name string) error {
	if p.MCPPacks == nil {
		return apperr.NotFound("tool pack", name)
	}
	return p.MCPPacks.Delete(ctx, teamID, name)
}

func view(p toolpacks.Pack) toolpacks.View {
	v := toolpacks.View{Name: p.Name, Kind: toolpacks.KindBuiltin, Description: p.Description, Tools: []toolpacks.ViewTool{}}
	for _, name := range p.Tools {
		s := specs[name]
		entry, _ := catalog.Get(name)
		where := "anywhere"
		if entry.Where == catalog.InTask {
			where = "task"
		}
		v.Tools = append(v.Tools, toolpacks.ViewTool{OfferedTool: catalog.OfferedTool{Name: s.Name, Description: s.Description, InputSchema: s.InputSchema()},
			Flag: entry.Flag, Where: where})
	}
	return v
}

func mcpPackView(r toolpacks.MCPPack) toolpacks.View {
	v := toolpacks.View{Name: r.Name, Kind: toolpacks.KindMCP, Description: r.Description, Tools: []toolpacks.ViewTool{},
		MCP: &toolpacks.MCPView{URL: r.URL, HasCredential: r.HasCredential, CredentialHeader: r.CredentialHeader,
			ListedAt: r.ListedAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}}
	for _, t := range r.Tools {
		var schema map[string]any
		_ = json.Unmarshal(t.InputSchema, &schema)
		v.Tools = append(v.Tools, toolpacks.ViewTool{OfferedTool: catalog.OfferedTool{Name: t.ModelName, Description: t.Description, InputSchema: schema},
			Where: "anywhere", ServerName: t.Name})
	}
	return v
}
