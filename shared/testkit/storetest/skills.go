package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// agentSkills: a skill's execution fields (its tool packs among them)
// read back whole, and the team's skill registry pages through the
// agents, one agent a page, each once.
func agentSkills(t *testing.T, f *fixture) {
	ctx := context.Background()
	svc := agents.NewService(f.Agents)
	sk := agents.Skill{Name: "audit", Description: "security audits", Domains: []string{"security"}, Tools: []string{"search_memories"},
		Packs: []string{"bridging", "memory"}, SystemPrompt: "Name the CWE of each finding.", ContextLoaders: []string{agents.LoaderOpenTasks, agents.LoaderTeamRoster},
		Kind: "report:security_audit", Public: true}
	_, err := svc.Create(ctx, f.team, agents.CreateInput{Slug: "dee", Name: "Dee", Skills: []agents.Skill{sk}})
	require.NoError(t, err)
	got, err := f.Agents.GetAgent(ctx, f.team, "dee")
	require.NoError(t, err)
	assert.Equal(t, []agents.Skill{sk}, got.Skills)

	var names []string
	p := paging.Page{Limit: 1}
	for range 10 {
		list, next, err := svc.Skills(ctx, f.team, agents.SkillFilter{}, p)
		require.NoError(t, err)
		for _, e := range list {
			names = append(names, e.Agent+"/"+e.Name)
		}
		if next == "" {
			break
		}
		p.Token = next
	}
	assert.Equal(t, []string{"ann/work", "bob/work", "cat/work", "dee/audit"}, names)
	one, err := svc.Skill(ctx, f.team, "dee", "audit")
	require.NoError(t, err)
	assert.Equal(t, sk, one.Skill)
}
