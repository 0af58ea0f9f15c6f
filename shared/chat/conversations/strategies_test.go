package conversations_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/prompts"
)

// pricedModel is a model of a priced ID whose agents answer the texts of
// answers (the agents named in fail return an error).
type pricedModel struct {
	mu      sync.Mutex
	answers map[string]string
	fail    map[string]bool
}

const pricedID = "amazon.nova-micro-v1:0"

func (m *pricedModel) Converse(_ context.Context, req models.Request) (models.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	agent := req.Metadata[models.MetadataAgent]
	if m.fail[agent] {
		return models.Response{}, models.ErrModel
	}
	return models.Response{Text: m.answers[agent], InputTokens: 100, OutputTokens: 40, ModelID: pricedID}, nil
}

// The question asked, a reply that answers it and one that does not: dana
// answers it, though luke scores higher at the gate.
const (
	indexQuestion = "How do I index the orders table?"
	relevant      = "Add an index on the orders table's customer column."
	offTopic      = "Check the code for bugs first."
)

func attemptsByAgent(res conversations.PostResult) map[string]cascade.Attempt {
	out := map[string]cascade.Attempt{}
	for _, a := range res.Routing.Attempts {
		out[a.Agent] = a
	}
	return out
}

// TOP_K keeps the most relevant reply, whoever scored higher at the gate,
// and only its attempt is marked kept; every answered attempt carries the
// cost of its model call.
func TestTopKKeepsTheMostRelevantReply(t *testing.T) {
	m := &pricedModel{answers: map[string]string{"luke": offTopic, "dana": relevant}}
	f := gateFixture(t, m, &fakeTools{})
	conv := f.create(t, "kyra")
	k := 2
	res, err := f.svc.Post(context.Background(), team, conv.ID, conversations.PostInput{Content: indexQuestion, Strategy: "top_k", K: &k})
	require.NoError(t, err)
	r := reply(t, res)
	assert.Equal(t, "dana", r.Agent)
	assert.Equal(t, relevant, r.Content)
	att := attemptsByAgent(res)
	require.Len(t, att, 2)
	assert.True(t, att["dana"].Kept)
	assert.False(t, att["luke"].Kept)
	for _, a := range att {
		assert.Equal(t, cascade.OutcomeAnswered, a.Outcome)
		assert.InDelta(t, models.Cost(pricedID, 100, 40), a.CostUSD, 1e-12, a.Agent)
	}
}

// synth is the synthesizer's model: it names every expert and reports its
// usage.
type synth struct{}

func (synth) Converse(context.Context, models.Request) (models.Response, error) {
	return models.Response{Text: "According to Dana, add an index; Luke says check the code.", InputTokens: 300, OutputTokens: 80, ModelID: pricedID}, nil
}

// ENSEMBLE merges the replies of the agents that answered into one,
// attributed to the most relevant contributor; the answered attempts are
// kept, a failed one is not; the reply costs its contributors' calls and
// the synthesis.
func TestEnsembleAttributesTheMergeToTheMostRelevantAndCostsTheSynthesis(t *testing.T) {
	m := &pricedModel{answers: map[string]string{"luke": offTopic, "dana": relevant}, fail: map[string]bool{"archie": true}}
	f := gateFixture(t, m, &fakeTools{})
	f.cfg.Synth = &routing.Synthesizer{Model: synth{}, ModelID: pricedID}
	f.rebuild()
	conv := f.create(t, "kyra")
	res, err := f.svc.Post(context.Background(), team, conv.ID, conversations.PostInput{Content: indexQuestion, Strategy: "ensemble"})
	require.NoError(t, err)
	r := reply(t, res)
	assert.Equal(t, "dana", r.Agent, "the most relevant contributor")
	assert.Equal(t, []string{"dana", "luke"}, r.Contributors)
	assert.Equal(t, pricedID, r.ModelID, "synthesized")
	assert.True(t, strings.HasPrefix(r.Content, "According to Dana"), r.Content)
	assert.InDelta(t, 2*models.Cost(pricedID, 100, 40)+models.Cost(pricedID, 300, 80), r.CostUSD, 1e-12)
	att := attemptsByAgent(res)
	require.Len(t, att, 3)
	assert.True(t, att["dana"].Kept)
	assert.True(t, att["luke"].Kept)
	assert.False(t, att["archie"].Kept, "failed")
	assert.Equal(t, cascade.OutcomeFailed, att["archie"].Outcome)
}

// An agent's memories are in its system prompt.
func TestAnAgentAnswersWithItsMemories(t *testing.T) {
	f := newFixture(t, collaborationOff)
	_, err := f.memory.Create(context.Background(), team, "kyra", memory.CreateInput{Type: "fact", Visibility: "private", Content: "the standup moved to 10:00"})
	require.NoError(t, err)
	c := f.create(t, "kyra")
	f.post(t, c.ID, "hello")
	assert.Contains(t, f.model.last(t).System, "What you remember:\n- the standup moved to 10:00")
	// The context it would answer with says so too.
	ac, err := f.svc.ContextFor(context.Background(), team, c.ID, "kyra")
	require.NoError(t, err)
	require.Len(t, ac.Memories.Private, 1)
	assert.Equal(t, "the standup moved to 10:00", ac.Memories.Private[0].Content)
}

// loadGate is gate with the agents' loads.
type loadGate struct {
	gate
	loads map[string]routing.Load
}

func (g loadGate) Score(ctx context.Context, req expertgate.Request) (expertgate.Response, error) {
	resp, err := g.gate.Score(ctx, req)
	resp.Loads = routing.LoadsOf(g.loads)
	return resp, err
}

// The roster an agent answers with shows its colleagues' active tasks as
// the gate counted them.
func TestTheRosterShowsTheGatesLoads(t *testing.T) {
	m := &pricedModel{answers: map[string]string{"luke": offTopic}}
	f := gateFixture(t, m, &fakeTools{})
	f.cfg.Router.Gate = loadGate{gate: f.cfg.Router.Gate.(gate), loads: map[string]routing.Load{"dana": {ActiveTasks: 2}}}
	var sys string
	f.cfg.Model = modelFunc(func(ctx context.Context, req models.Request) (models.Response, error) {
		sys = req.System
		return m.Converse(ctx, req)
	})
	f.rebuild()
	conv := f.create(t, "kyra")
	_, err := f.svc.Post(context.Background(), team, conv.ID, conversations.PostInput{Content: indexQuestion, Strategy: "top_1"})
	require.NoError(t, err)
	assert.Contains(t, sys, "busy (2 active tasks)")
}

type modelFunc func(context.Context, models.Request) (models.Response, error)

func (f modelFunc) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	return f(ctx, req)
}

// A conversation's handoffs: none is an empty list, an unknown
// conversation is not found.
func TestHandoffsOfAConversation(t *testing.T) {
	f := newFixture(t, collaborationOff)
	c := f.create(t, "kyra")
	list, err := f.svc.Handoffs(context.Background(), team, c.ID)
	require.NoError(t, err)
	assert.Empty(t, list)
	_, err = f.svc.Handoffs(context.Background(), team, "conv_unknown")
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "%v", err)
}

// One call changes at most 20 agents.
func TestSetAgentsTakesUpToTwentyAgents(t *testing.T) {
	f := newFixture(t, collaborationOff)
	c := f.create(t, "kyra")
	var slugs []string
	for i := range 21 {
		slugs = append(slugs, fmt.Sprintf("gone-%02d", i))
	}
	// Twenty pass the count and are checked one by one (none of these
	// takes part: not found).
	_, err := f.svc.SetAgents(context.Background(), team, c.ID, conversations.AgentsInput{Remove: slugs[:20]})
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "%v", err)
	_, err = f.svc.SetAgents(context.Background(), team, c.ID, conversations.AgentsInput{Remove: slugs})
	ae := requireAppErr(t, err, apperr.EINVALID, "")
	assert.Equal(t, "add", ae.Field)
}

// planner is a compound planner that plans what it is given (nil result:
// no call) or fails.
type planner struct {
	result *conversations.PlanResult
	err    error
	asked  []conversations.PlanRequest
}

func (p *planner) Plan(_ context.Context, in conversations.PlanRequest) (conversations.PlanResult, error) {
	p.asked = append(p.asked, in)
	if p.result == nil {
		return conversations.PlanResult{}, p.err
	}
	return *p.result, p.err
}

// A message that starts a plan is answered by the lead's note with the
// plan pending, and no agent's model; the lead is the conversation's
// agent, or the team's default. A message naming its agent is not
// planned; a planner that fails, makes no call or starts no plan leaves
// the message to its agent.
func TestAPlannedMessageIsAnsweredByTheLeadsNote(t *testing.T) {
	plan := &conversations.WorkRef{Type: "plan", ID: "plan_1", Agent: "kyra", Status: "running"}
	call := &cascade.PlannerCall{Trigger: "and", Outcome: "planned", PlanID: "plan_1", Steps: 2}
	for _, c := range []struct {
		name    string
		p       *planner
		convTo  string
		message string
		asked   bool
		planned bool
		lead    string
	}{
		{"planned", &planner{result: &conversations.PlanResult{Call: call, Ref: plan, Note: "I will plan it in two steps."}}, "luke", "review the code and chart the data", true, true, "luke"},
		{"planned, default lead", &planner{result: &conversations.PlanResult{Call: call, Ref: plan, Note: "I will plan it in two steps."}}, "", "review the code and chart the data", true, true, "kyra"},
		{"a mention", &planner{result: &conversations.PlanResult{Call: call, Ref: plan}}, "", "@dana chart the data", false, false, ""},
		{"the planner fails", &planner{err: errors.New("planner down")}, "", "review the code and chart the data", true, false, "kyra"},
		{"no call", &planner{}, "", "review the code", true, false, "kyra"},
		{"no plan", &planner{result: &conversations.PlanResult{Call: &cascade.PlannerCall{Outcome: "single"}}}, "", "review the code", true, false, "kyra"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, collaborationOn)
			f.cfg.Planner = c.p
			f.rebuild()
			conv := f.create(t, c.convTo)
			r := reply(t, f.post(t, conv.ID, c.message))
			require.Equal(t, c.asked, len(c.p.asked) == 1, "asked")
			if c.asked {
				assert.Equal(t, c.lead, c.p.asked[0].Lead)
			}
			if c.planned {
				assert.Equal(t, "I will plan it in two steps.", r.Content)
				assert.Equal(t, []conversations.WorkRef{*plan}, r.Pending)
				assert.Equal(t, "plan", r.Strategy)
				assert.Empty(t, f.model.requests, "no agent's model")
			} else {
				assert.Empty(t, r.Pending)
				assert.NotEmpty(t, f.model.requests, "an agent answered")
			}
		})
	}
}

// An unknown conversation's messages are not found; an empty one's are an
// empty page.
func TestMessagesOfAConversation(t *testing.T) {
	f := newFixture(t, collaborationOff)
	c := f.create(t, "kyra")
	assert.Empty(t, f.messages(t, c.ID))
	_, _, err := f.svc.Messages(context.Background(), team, "conv_unknown", paging.Page{})
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "%v", err)
}

// The recent-memories loader reads the LoaderItems newest the agent may
// see, no more.
func TestTheRecentMemoriesLoaderShowsTenAtMost(t *testing.T) {
	f := newFixture(t, collaborationOn)
	ctx := context.Background()
	f.withSkill(t, func(sk *agents.Skill) { sk.ContextLoaders = []string{agents.LoaderRecentMemories} })
	for i := range prompts.LoaderItems + 1 {
		_, err := f.memory.Create(ctx, team, "luke", memory.CreateInput{Type: "fact", Visibility: "private", Content: fmt.Sprintf("note %02d", i)})
		require.NoError(t, err)
	}
	f.sources.MemoryLog = f.store
	f.rebuild()
	c := f.create(t, "")
	f.post(t, c.ID, "Can you review this Go function for bugs?")
	sys := f.model.last(t).System
	_, block, ok := strings.Cut(sys, "Your recent memories (newest first):\n")
	require.True(t, ok, sys)
	block, _, _ = strings.Cut(block, "\n\n")
	assert.Equal(t, prompts.LoaderItems, strings.Count(block, "- note "), block)
	assert.NotContains(t, block, "more)", "only the ten were read")
}

// The conversation-summary loader names the participants only when there
// are some: a new conversation without an agent has none yet.
func TestTheConversationSummaryOmitsAnEmptyParticipantList(t *testing.T) {
	f := newFixture(t, collaborationOn)
	f.withSkill(t, func(sk *agents.Skill) { sk.ContextLoaders = []string{agents.LoaderConversationSummary} })
	c := f.create(t, "")
	f.post(t, c.ID, "Can you review this Go function for bugs?")
	sys := f.model.last(t).System
	assert.Contains(t, sys, "This conversation:\n- Title: Chat")
	assert.NotContains(t, sys, "Participants:")
}
