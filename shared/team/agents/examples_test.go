package agents_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// examplesOf is n distinct examples of length size (size ≥ 4).
func examplesOf(n, size int) []string {
	out := make([]string, n)
	for i := range out {
		id := fmt.Sprintf("%04d", i)
		out[i] = id + strings.Repeat("x", size-len(id))
	}
	return out
}

// A skill's examples: at most 30, each 1 to 200 characters after
// trimming, no two alike (case aside), 24 KiB per agent; each limit at the
// value and one past it, refused with the field named and nothing stored.
func TestSkillExamplesAreHeldToTheirLimits(t *testing.T) {
	big := func(n int) []agents.Skill {
		// n bytes of examples over skills of 30 examples of 200 bytes.
		var skills []agents.Skill
		for i := 0; n > 0; i++ {
			var ex []string
			for j := 0; j < agents.MaxExamples && n > 0; j++ {
				size := min(agents.MaxExampleLength, n)
				ex = append(ex, fmt.Sprintf("%02d%02d", i, j)+strings.Repeat("y", size-4))
				n -= size
			}
			skills = append(skills, agents.Skill{Name: fmt.Sprintf("skill-%d", i), Description: "d", Examples: ex})
		}
		return skills
	}
	for _, c := range []struct {
		name   string
		skills []agents.Skill
		field  string
	}{
		{"30 examples", []agents.Skill{{Name: "sk", Description: "d", Examples: examplesOf(agents.MaxExamples, 10)}}, ""},
		{"31 examples", []agents.Skill{{Name: "sk", Description: "d", Examples: examplesOf(agents.MaxExamples+1, 10)}}, "skills[0].examples"},
		{"200 characters", []agents.Skill{{Name: "sk", Description: "d", Examples: []string{strings.Repeat("é", agents.MaxExampleLength)}}}, ""},
		{"201 characters", []agents.Skill{{Name: "sk", Description: "d", Examples: []string{strings.Repeat("é", agents.MaxExampleLength+1)}}}, "skills[0].examples"},
		{"200 after trimming", []agents.Skill{{Name: "sk", Description: "d", Examples: []string{"  " + strings.Repeat("a", agents.MaxExampleLength) + "\n"}}}, ""},
		{"blank", []agents.Skill{{Name: "sk", Description: "d", Examples: []string{"fine", "   "}}}, "skills[0].examples"},
		{"duplicate", []agents.Skill{{Name: "sk", Description: "d", Examples: []string{"Reset my PIN", " reset my pin "}}}, "skills[0].examples"},
		{"24 KiB", big(agents.MaxExampleBytes), ""},
		{"24 KiB and one byte", big(agents.MaxExampleBytes + 1), "skills[4].examples"},
		{"second skill", []agents.Skill{{Name: "aa", Description: "d"}, {Name: "bb", Description: "d", Examples: []string{""}}}, "skills[1].examples"},
	} {
		t.Run(c.name, func(t *testing.T) {
			svc, store := skillTeam(t)
			ctx := context.Background()
			_, err := svc.Create(ctx, "t1", agents.CreateInput{Slug: "examples", Name: "Ex", Skills: c.skills})
			if c.field == "" {
				require.NoError(t, err)
				return
			}
			var ae *apperr.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, apperr.EINVALID, ae.Code)
			assert.Equal(t, c.field, ae.Field, ae.Message)
			_, err = store.GetAgent(ctx, "t1", "examples")
			assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "nothing stored")
		})
	}
}

// Examples are stored trimmed and shown on the agent's own read and its
// skill's; lists give their count; an update that drops them drops them.
func TestSkillExamplesAreShownOnReadsAndCountedInLists(t *testing.T) {
	svc, _ := skillTeam(t)
	ctx := context.Background()
	_, err := svc.Create(ctx, "t1", agents.CreateInput{Slug: "examples", Name: "Ex", Skills: []agents.Skill{
		{Name: "pins", Description: "PIN changes", Examples: []string{"  change my pin ", "I forgot my PIN"}}}})
	require.NoError(t, err)
	a, err := svc.Get(ctx, "t1", "examples")
	require.NoError(t, err)
	assert.Equal(t, []string{"change my pin", "I forgot my PIN"}, a.Skills[0].Examples)
	assert.Zero(t, a.Skills[0].ExampleCount)
	e, err := svc.Skill(ctx, "t1", "examples", "pins")
	require.NoError(t, err)
	assert.Equal(t, []string{"change my pin", "I forgot my PIN"}, e.Examples)

	list, _, err := svc.List(ctx, "t1", agents.Filter{}, paging.Page{})
	require.NoError(t, err)
	found := false
	for _, a := range list {
		if a.Slug == "examples" {
			found = true
			assert.Nil(t, a.Skills[0].Examples, "a list carries no examples")
			assert.Equal(t, 2, a.Skills[0].ExampleCount)
		}
	}
	require.True(t, found)
	entries, _, err := svc.Skills(ctx, "t1", agents.SkillFilter{Agent: "examples"}, paging.Page{})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Nil(t, entries[0].Examples)
	assert.Equal(t, 2, entries[0].ExampleCount)

	skills := []agents.Skill{{Name: "pins", Description: "PIN changes"}}
	_, err = svc.Update(ctx, "t1", "examples", agents.UpdateInput{Skills: &skills})
	require.NoError(t, err)
	a, err = svc.Get(ctx, "t1", "examples")
	require.NoError(t, err)
	assert.Empty(t, a.Skills[0].Examples)
	// Another team's agent of the same slug is not this one.
	_, err = svc.Get(ctx, "t2", "examples")
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND))
}

// A remote agent's card gives its skills' examples, kept to the limits
// (never refused: what does not fit is left out).
func TestRemoteSkillsKeepTheCardsExamples(t *testing.T) {
	long := strings.Repeat("z", agents.MaxExampleLength+50)
	many := examplesOf(agents.MaxExamples+5, 8)
	skills := agents.RemoteSkills(agents.RemoteCard{Skills: []agents.RemoteSkill{
		{ID: "billing", Name: "Billing", Description: "Invoices", Examples: []string{" where is my invoice? ", "", "Where is my invoice?", long}},
		{ID: "many", Name: "Many", Description: "Many examples", Examples: many},
	}})
	require.Len(t, skills, 2)
	assert.Equal(t, []string{"where is my invoice?", long[:agents.MaxExampleLength]}, skills[0].Examples)
	assert.Equal(t, many[:agents.MaxExamples], skills[1].Examples)
}
