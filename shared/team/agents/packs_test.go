package agents_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
)

// teamPacks are the MCP packs each team has (toolpacks.Registry's
// answer); err fails every question.
type teamPacks struct {
	has   map[string][]string
	err   error
	asked []string
}

func (p *teamPacks) Exists(_ context.Context, teamID, name string) (bool, error) {
	p.asked = append(p.asked, teamID+"/"+name)
	if p.err != nil {
		return false, p.err
	}
	for _, n := range p.has[teamID] {
		if n == name {
			return true, nil
		}
	}
	return false, nil
}

func packsService(t *testing.T) (*agents.Service, *memstore.Store, *teamPacks) {
	t.Helper()
	store := memstore.New()
	for _, id := range []string{"t1", "t2"} {
		require.NoError(t, store.CreateTeam(context.Background(), teams.Team{ID: id, Name: id}, teams.APIKey{ID: "k-" + id}, "h-"+id))
	}
	packs := &teamPacks{has: map[string][]string{"t1": {"crm"}}}
	svc := agents.NewService(store)
	svc.Packs = packs
	return svc, store, packs
}

func withPacks(packs ...string) []agents.Skill {
	return []agents.Skill{
		{Name: "general", Description: "Answers questions"},
		{Name: "orders", Description: "Answers questions on orders", Packs: packs},
	}
}

// A skill names packs the team has: built-in ones, and its own MCP packs
// (asked of PackChecker); they are stored with the skill.
func TestASkillNamesThePacksTheTeamHas(t *testing.T) {
	svc, store, packs := packsService(t)
	ctx := context.Background()
	a, err := svc.Create(ctx, "t1", agents.CreateInput{Slug: "orders", Name: "Orders", Skills: withPacks("crm", "bridging")})
	require.NoError(t, err)
	assert.Equal(t, []string{"crm", "bridging"}, a.Skills[1].Packs)
	assert.Equal(t, []string{"t1/crm"}, packs.asked, "a built-in pack is not asked for")
	got, err := store.GetAgent(ctx, "t1", "orders")
	require.NoError(t, err)
	assert.Equal(t, []string{"crm", "bridging"}, got.Skills[1].Packs)
	assert.Equal(t, []string{"crm", "bridging"}, got.Packs())
	only, ok := got.WithSkill("general")
	require.True(t, ok)
	assert.Empty(t, only.Packs(), "a skill's packs are its own")
}

// A pack the team does not have (another team's MCP pack, an unknown
// name), a name no pack may have, one named twice or more than five are a
// 400 naming the skill's packs, and nothing is stored.
func TestAnUnknownPackIsRefusedNamingTheField(t *testing.T) {
	svc, store, _ := packsService(t)
	ctx := context.Background()
	for name, packs := range map[string][]string{
		"another team's":  {"crm"},
		"unknown":         {"orders-db"},
		"not a pack name": {"Orders DB!"},
		"twice":           {"memory", "memory"},
		"more than five":  {"collaboration", "memory", "board", "reporting", "bridging", "crm"},
	} {
		team := "t2"
		if name == "more than five" || name == "twice" {
			team = "t1"
		}
		_, err := svc.Create(ctx, team, agents.CreateInput{Slug: "orders", Name: "Orders", Skills: withPacks(packs...)})
		require.Error(t, err, name)
		assert.Equal(t, "skills[1].packs", fieldOf(t, err), name)
		_, err = store.GetAgent(ctx, team, "orders")
		assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "%s: nothing stored: %v", name, err)
	}
	// Without a PackChecker only the built-in packs are known.
	bare := agents.NewService(store)
	_, err := bare.Create(ctx, "t1", agents.CreateInput{Slug: "orders", Name: "Orders", Skills: withPacks("crm")})
	assert.Equal(t, "skills[1].packs", fieldOf(t, err))
	_, err = bare.Create(ctx, "t1", agents.CreateInput{Slug: "orders", Name: "Orders", Skills: withPacks("memory")})
	require.NoError(t, err)
}

// An update checks the packs a skill names anew; those the agent already
// named are not asked again (an MCP pack deleted since leaves the rest of
// the agent editable). A failed read of the team's packs is an error, and
// nothing is written.
func TestAnUpdateChecksTheNewPacks(t *testing.T) {
	svc, store, packs := packsService(t)
	ctx := context.Background()
	_, err := svc.Create(ctx, "t1", agents.CreateInput{Slug: "orders", Name: "Orders", Skills: withPacks("crm")})
	require.NoError(t, err)
	packs.has["t1"], packs.asked = nil, nil // crm deleted

	name := "Order desk"
	a, err := svc.Update(ctx, "t1", "orders", agents.UpdateInput{Name: &name})
	require.NoError(t, err)
	assert.Equal(t, 2, a.Version)
	assert.Empty(t, packs.asked, "a pack the agent named is not asked again")

	skills := withPacks("crm", "erp")
	_, err = svc.Update(ctx, "t1", "orders", agents.UpdateInput{Skills: &skills})
	assert.Equal(t, "skills[1].packs", fieldOf(t, err))
	assert.Equal(t, []string{"t1/erp"}, packs.asked)

	packs.err = errors.New("table unavailable")
	skills = withPacks("crm", "billing")
	_, err = svc.Update(ctx, "t1", "orders", agents.UpdateInput{Skills: &skills})
	require.ErrorIs(t, err, packs.err)
	got, err := store.GetAgent(ctx, "t1", "orders")
	require.NoError(t, err)
	assert.Equal(t, 2, got.Version, "nothing written")
	assert.Equal(t, []string{"crm"}, got.Skills[1].Packs)
}
