package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/team/agents"
)

func TestSampleTakesEveryStrideThMessageFromTheFirst(t *testing.T) {
	msgs := make([]labelled, 10)
	for i := range msgs {
		msgs[i].Text = fmt.Sprint(i)
	}
	texts := func(ls []labelled) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.Text)
		}
		return out
	}
	for _, c := range []struct {
		stride int
		want   []string
	}{
		{1, texts(msgs)},
		{3, []string{"0", "3", "6", "9"}},
		{4, []string{"0", "4", "8"}},
		{10, []string{"0"}},
		{11, []string{"0"}},
	} {
		assert.Equal(t, c.want, texts(sample(msgs, c.stride)), "stride %d", c.stride)
	}
	assert.Empty(t, sample(nil, 3))
}

// The turns' answers are the local cloud's (testdata, trimmed to two
// scores): a specialist the gate chose, and the default agent as the
// fallback.
func TestRoutedOfReadsTheTurnsRoutingDecision(t *testing.T) {
	m := labelled{Text: "a message", agent: "luke", skill: "code-review"}
	for _, c := range []struct {
		file string
		want routed
	}{
		{"turn_gate.json", routed{msg: m, agent: "luke", skill: "code-review", confidence: 0.934}},
		{"turn_fallback.json", routed{msg: m, agent: "kyra", confidence: 0.207, fallback: true}},
	} {
		body, err := os.ReadFile("testdata/" + c.file)
		require.NoError(t, err)
		got, err := routedOf(m, body)
		require.NoError(t, err, c.file)
		assert.Equal(t, c.want, got, c.file)
	}
	for _, body := range []string{`{"routing":{"selected_agents":[]}}`, `{"user_message":{}}`, `not json`} {
		_, err := routedOf(m, []byte(body))
		assert.Error(t, err, body)
	}
}

func TestWithinLimitsCutsToWhatTheAPIAccepts(t *testing.T) {
	examples := func(n, size int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%0*d", size, i)
		}
		return out
	}
	skills := func(n, k, size int) []agents.Skill {
		out := make([]agents.Skill, n)
		for i := range out {
			out[i] = agents.Skill{Name: fmt.Sprint("s", i), Examples: examples(k, size)}
		}
		return out
	}

	// CLINC150's shape: 15 skills of 25 short examples is within every limit.
	team := []agents.Agent{{Slug: "banking", Skills: skills(15, 25, 40)}}
	got, cut := withinLimits(team)
	assert.Empty(t, cut)
	assert.Equal(t, team, got)

	// Too many skills, too many examples per skill, too many bytes.
	team = []agents.Agent{
		{Slug: "wide", Skills: skills(agents.MaxSkills+2, 1, 10)},
		{Slug: "deep", Skills: skills(1, agents.MaxExamples+3, 10)},
		{Slug: "heavy", Skills: skills(3, 20, 500)},
	}
	got, cut = withinLimits(team)
	assert.Len(t, got[0].Skills, agents.MaxSkills)
	assert.Len(t, got[1].Skills[0].Examples, agents.MaxExamples)
	perAgent := agents.MaxExampleBytes / 500 // 49 whole examples of 500 bytes
	assert.Len(t, got[2].Skills[0].Examples, 20)
	assert.Len(t, got[2].Skills[1].Examples, 20)
	assert.Len(t, got[2].Skills[2].Examples, perAgent-40, "the last skill's last examples go")
	assert.Equal(t, []string{
		fmt.Sprintf("wide: %d skills, the first %d kept", agents.MaxSkills+2, agents.MaxSkills),
		"deep: 3 examples dropped",
		fmt.Sprintf("heavy: %d examples dropped", 60-perAgent),
	}, cut)
	assert.Len(t, team[0].Skills, agents.MaxSkills+2, "the team itself is left as it was")
	assert.Len(t, team[2].Skills[2].Examples, 20)
}
