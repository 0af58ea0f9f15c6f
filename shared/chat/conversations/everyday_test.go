package conversations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/routing/wordllama"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
)

// The demo team as a user talks to it (issue 42): the ExpertGate in
// process with the embedder the expert-gate function uses, the demo
// skills' examples, the default threshold; by example similarity (a team
// whose classifier is not fitted yet) and with the team's classifier
// fitted as the classifier-fitter fits it. None of these messages is one
// of the examples (shared/testkit/demo/examples.go).
func TestTheDemoTeamRoutesEverydayLanguage(t *testing.T) {
	for _, classify := range []bool{false, true} {
		t.Run(map[bool]string{false: "example similarity", true: "classifier"}[classify], func(t *testing.T) {
			everydayLanguage(t, classify)
		})
	}
}

func everydayLanguage(t *testing.T, classify bool) {
	dir, err := wordllama.Dir()
	require.NoError(t, err, "make wordllama fetches the embedding model")
	model, err := wordllama.Load(dir)
	require.NoError(t, err)
	f := newFixture(t, cascade.Flags{Collaboration: true, ExpertGate: true})
	gate := &expertgate.Service{Source: f.store, Embedder: model}
	if classify {
		gate.Classifiers = f.store
		res, err := (&expertgate.Fitter{Gate: &expertgate.Service{Source: f.store, Embedder: model}, Store: f.store}).Fit(context.Background(), demo.TeamID)
		require.NoError(t, err)
		require.Equal(t, "fitted", res.Outcome)
	}
	f.cfg.Router.Gate = gate
	f.rebuild()

	var skill string // the last turn's decision's skill
	routed := func(t *testing.T, conv, msg string) (string, bool) {
		t.Helper()
		res := f.post(t, conv, msg)
		require.NotEmpty(t, res.Routing.SelectedAgents, msg)
		skill = res.Routing.Skill
		return res.Routing.SelectedAgents[0], res.Routing.Fallback
	}
	// Everyday specialist questions, each the first turn of a new
	// conversation: the specialist answers, chosen by the gate.
	for _, c := range []struct{ msg, want string }{
		{"Could you polish the intro of my blog article so it grabs people?", "wren"},
		{"Please tidy up the wording of this announcement to customers", "wren"},
		{"Our signups dropped 20% last month. Can you help me figure out why?", "dana"},
		{"Which product had the biggest jump in revenue this year?", "dana"},
		{"Is it bad practice to have a 400-line method in one class?", "luke"},
		{"My Python code raises a KeyError every time I run it", "luke"},
		{"How should we lay out the services for our new ordering platform?", "archie"},
		{"Will a single Postgres instance cope when we reach a million users?", "archie"},
		{"Is it risky to send passwords in a URL query string?", "sage"},
		{"Somebody may have stolen our admin credentials, what now?", "sage"},
		{"Rewrite my LinkedIn summary so it sounds more confident", "wren"},
		{"What's the median session length in this week's numbers?", "dana"},
	} {
		got, fallback := routed(t, f.create(t, "").ID, c.msg)
		assert.Equal(t, c.want, got, c.msg)
		assert.False(t, fallback, "%s: the gate chose, no fallback", c.msg)
		assert.NotEmpty(t, skill, "%s: the decision names the skill that matched", c.msg)
	}
	// General questions and small talk stay with kyra.
	for _, msg := range []string{
		"hello! how's it going?",
		"thank you so much",
		"what's a good way to spend a rainy weekend?",
		"can you help me plan a birthday party?",
		"what is the capital of Australia?",
		"any tips for sleeping better?",
		"how many days are there until the end of the year?",
		"who are you and what do you do?",
	} {
		got, _ := routed(t, f.create(t, "").ID, msg)
		assert.Equal(t, "kyra", got, msg)
	}
	// Follow-ups stay with the specialist the conversation is with.
	for _, c := range []struct{ first, want, next string }{
		{"Can you check this Go function for a race condition?", "luke", "ok, and what about the second one?"},
		{"Can you check this Go function for a race condition?", "luke", "thanks, can you explain that more simply?"},
		{"Make my product launch email sound more upbeat", "wren", "shorter please"},
		{"Make my product launch email sound more upbeat", "wren", "great, now a version for our investors"},
		{"Plot our monthly churn and tell me if it's getting worse", "dana", "what about just the last quarter?"},
		{"Plot our monthly churn and tell me if it's getting worse", "dana", "and why do you think that is?"},
		{"How do we stop attackers guessing our users' passwords?", "sage", "what would that cost us?"},
		{"How do we stop attackers guessing our users' passwords?", "sage", "can you give me a checklist?"},
		{"Should our reporting service read from a replica database?", "archie", "ok let's do that, what's next?"},
		{"Should our reporting service read from a replica database?", "archie", "thanks"},
	} {
		conv := f.create(t, "").ID
		got, _ := routed(t, conv, c.first)
		require.Equal(t, c.want, got, c.first)
		got, _ = routed(t, conv, c.next)
		assert.Equal(t, c.want, got, "%s → %s", c.first, c.next)
	}
}
