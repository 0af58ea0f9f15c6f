package agents

import (
	"context"
	"slices"
	"strings"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

// A skill names tool packs (Skill.Packs): in a chat reply the skill
// answers, the agent may use their tools beside its own (docs/tools.md).
// A pack is a built-in one (toolpacks.Builtin) or one of the team's MCP
// packs, which the agents domain cannot read itself: PackChecker answers
// for them (the agents function wires toolpacks.Registry).

// PackChecker answers whether a team may name a tool pack: a built-in
// one or one of its MCP packs (what GET /v1/tool-packs lists).
type PackChecker interface {
	Exists(ctx context.Context, teamID, name string) (bool, error)
}

// Packs are the tool packs a's skills name, in skill order, each once.
// For an agent scoped to the skill that answers (WithSkill) they are
// that skill's.
func (a Agent) Packs() []string {
	var out []string
	for _, sk := range a.Skills {
		for _, p := range sk.Packs {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// checkWith is check (models.go), then checkPacks.
func (s *Service) checkWith(ctx context.Context, a Agent, previous *Model, named []string) error {
	if err := s.check(a, previous); err != nil {
		return err
	}
	return s.checkPacks(ctx, a, named)
}

// checkPacks refuses a pack a skill of a names that the team does not
// have: EINVALID naming skills[i].packs. Packs in named (those the stored
// agent already names) are not asked again: an MCP pack deleted since
// keeps an update that leaves it alone possible, and gives no tool.
func (s *Service) checkPacks(ctx context.Context, a Agent, named []string) error {
	for i, sk := range a.Skills {
		for _, p := range sk.Packs {
			if toolpacks.Known(p) || slices.Contains(named, p) {
				continue
			}
			ok := false
			if s.Packs != nil {
				var err error
				if ok, err = s.Packs.Exists(ctx, a.TeamID, p); err != nil {
					return err
				}
			}
			if !ok {
				field := "skills[" + itoa(i) + "].packs"
				return apperr.Invalid(field, "%s: unknown tool pack %q (built-in: %s; or one of the team's MCP packs, GET /v1/tool-packs)",
					field, p, strings.Join(toolpacks.Names(), ", "))
			}
		}
	}
	return nil
}
