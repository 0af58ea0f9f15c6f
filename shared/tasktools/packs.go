package tasktools

import (
	"context"

	"github.com/conclave-ai/conclave/shared/toolpacks"
	"github.com/conclave-ai/conclave/shared/toolset"
)

// Packs answers GET /v1/tool-packs and GET /v1/tool-packs/{name}: the
// built-in packs with each tool's description and the very schema its
// model receives (the catalog's), whatever the stage's flags (a tool whose
// flag is off is not given, pack or not: its flag is shown).
type Packs struct{}

// List returns every pack.
func (Packs) List(context.Context) toolpacks.List {
	out := toolpacks.List{ToolPacks: []toolpacks.View{}}
	for _, p := range toolpacks.Builtin {
		out.ToolPacks = append(out.ToolPacks, view(p))
	}
	return out
}

// Get returns pack name. Returns ENOTFOUND for an unknown one.
func (Packs) Get(_ context.Context, name string) (toolpacks.View, error) {
	p, err := toolpacks.Get(name)
	if err != nil {
		return toolpacks.View{}, err
	}
	return view(p), nil
}

func view(p toolpacks.Pack) toolpacks.View {
	v := toolpacks.View{Name: p.Name, Description: p.Description, Tools: []toolpacks.ViewTool{}}
	for _, name := range p.Tools {
		s := specs[name]
		entry, _ := toolset.Get(name)
		where := "anywhere"
		if entry.Where == toolset.InTask {
			where = "task"
		}
		v.Tools = append(v.Tools, toolpacks.ViewTool{OfferedTool: toolset.OfferedTool{Name: s.Name, Description: s.Description, InputSchema: s.InputSchema()},
			Flag: entry.Flag, Where: where})
	}
	return v
}
