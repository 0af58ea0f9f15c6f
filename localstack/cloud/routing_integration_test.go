//go:build integration

// Routing end to end against the local cloud: HTTP requests through the
// edge's API (authorizer, route, handler), the conversations function
// invoking the expert-gate function through the Lambda Invoke API, the
// real table with its transactions, and the decision log read back.
package cloud_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/routing/expertgate/gateclient"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/wire/localmodelwiring"
)

// demoTeam is a fresh team with the demo agents (Kyra the default), its
// API key, and an HTTP client for it.
type demoTeam struct {
	id, key string
	t       *testing.T
}

func mustDemoTeam(t *testing.T, e env) demoTeam {
	t.Helper()
	ctx := context.Background()
	tm, k, err := teams.NewService(e.db.teams).CreateTeam(ctx, "routing")
	require.NoError(t, err)
	svc := agents.NewService(e.db.agents)
	for _, in := range demo.Agents {
		_, err := svc.Create(ctx, tm.ID, in)
		require.NoError(t, err)
	}
	_, err = svc.SetDefault(ctx, tm.ID, demo.DefaultAgent)
	require.NoError(t, err)
	return demoTeam{id: tm.ID, key: k.Secret, t: t}
}

// call sends a request to the local API and decodes the JSON answer.
func (d demoTeam) call(method, path string, body any) (int, map[string]any) {
	d.t.Helper()
	base := os.Getenv("CONCLAVE_BASE_URL")
	require.NotEmpty(d.t, base, "CONCLAVE_BASE_URL is not set: run make test")
	resp := apitest.Client{Base: base, Key: d.key, T: d.t}.Do(method, path, body)
	out := map[string]any{}
	if len(resp.Body) > 0 {
		out = resp.JSON(d.t)
	}
	return resp.Status, out
}

func (d demoTeam) conversation(agent string) string {
	d.t.Helper()
	body := map[string]any{"title": "routing test"}
	if agent != "" {
		body["agent"] = agent
	}
	st, c := d.call("POST", "/v1/conversations", body)
	require.Equal(d.t, 201, st, c)
	return c["id"].(string)
}

// post sends a message and returns the turn (201 expected).
func (d demoTeam) post(conv string, body map[string]any) map[string]any {
	d.t.Helper()
	st, res := d.call("POST", "/v1/conversations/"+conv+"/messages", body)
	require.Equal(d.t, 201, st, res)
	return res
}

func lastReply(t *testing.T, turn map[string]any) map[string]any {
	t.Helper()
	replies := turn["replies"].([]any)
	require.NotEmpty(t, replies)
	r := replies[len(replies)-1].(map[string]any)
	require.Equal(t, "assistant", r["role"], r)
	return r
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestMentionWinsOverTheGate(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("kyra")

	// The question is Luke's by skill, but Dana is addressed.
	turn := d.post(conv, map[string]any{"content": "@dana can you review this function for bugs?"})
	assert.Equal(t, "dana", lastReply(t, turn)["agent"])
	r := turn["routing"].(map[string]any)
	assert.Equal(t, "mention", r["strategy"])
	assert.Equal(t, "user_mention", r["reason"])
	assert.Equal(t, 1.0, r["confidence"])

	turn = d.post(conv, map[string]any{"content": "Thanks. Now go back to Kyra please."})
	assert.Equal(t, "kyra", lastReply(t, turn)["agent"])

	st, c := d.call("GET", "/v1/conversations/"+conv, nil)
	require.Equal(t, 200, st)
	assert.Equal(t, "kyra", c["current_agent"])
	roles := map[string]string{}
	for _, p := range c["participants"].([]any) {
		pm := p.(map[string]any)
		roles[pm["agent"].(string)] = pm["role"].(string)
		assert.NotEmpty(t, pm["joined_at"])
	}
	assert.Equal(t, map[string]string{"kyra": "primary", "dana": "invited"}, roles)
}

func TestCodeReviewReachesTheCodeReviewerThroughTheGate(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("kyra")
	turn := d.post(conv, map[string]any{"content": "Can you review this Go function for bugs before I merge the pull request?"})
	reply := lastReply(t, turn)
	assert.Equal(t, "luke", reply["agent"])
	assert.Contains(t, reply["content"], "As Luke, on code review: review and debug code")
	assert.Positive(t, reply["output_tokens"])
	assert.NotEmpty(t, reply["model_id"])

	r := turn["routing"].(map[string]any)
	assert.Equal(t, "top_1", r["strategy"])
	assert.Equal(t, "expert_gate", r["reason"])
	assert.Equal(t, false, r["fallback_used"])
	assert.Equal(t, []string{"luke"}, strs(r["selected_agents"]))
	assert.GreaterOrEqual(t, r["confidence"].(float64), routing.DefaultThreshold)
	scores := r["scores"].([]any)
	// The gate answers its best routing.ExplainedScores: with six agents,
	// every one.
	require.Len(t, scores, min(len(demo.Agents), routing.ExplainedScores), "the gate's best scores, every agent of a small team")
	top := scores[0].(map[string]any)
	assert.Equal(t, "luke", top["agent_slug"])
	for _, k := range []string{"skill_match", "past_performance", "personality_fit", "load_balance", "overall"} {
		assert.Contains(t, top, k)
	}
	assert.Equal(t, routing.NeutralPerformance, top["past_performance"], "no ratings yet")
	assert.Equal(t, []string{"code-review"}, strs(top["matching_skills"]))
	assert.NotEmpty(t, top["explanation"])
	assert.Positive(t, r["gate_latency_ms"], "the gate function measured its scoring")
	assert.Positive(t, r["router_latency_ms"])
	assert.Len(t, r["complexity_dimensions"], 5)
	assert.NotEmpty(t, r["selected_tier"])
	assert.NotEmpty(t, r["selected_model"])
	assert.Positive(t, r["estimated_cost"])
}

func TestVagueQuestionFallsBackToTheDefaultAgent(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("")
	turn := d.post(conv, map[string]any{"content": "Hmm, what do you think about it?"})
	replies := turn["replies"].([]any)
	require.Len(t, replies, 2, "a system note, then the default agent's reply")
	note := replies[0].(map[string]any)
	assert.Equal(t, "system", note["role"])
	assert.Contains(t, note["content"], "default agent is answering")
	assert.Equal(t, "kyra", lastReply(t, turn)["agent"])
	r := turn["routing"].(map[string]any)
	assert.Equal(t, true, r["fallback_used"])
	assert.Equal(t, "fallback", r["reason"])
	assert.Less(t, r["confidence"].(float64), routing.DefaultThreshold)

	st, list := d.call("GET", "/v1/routing/decisions?fallback=true&conversation_id="+conv, nil)
	require.Equal(t, 200, st, list)
	items := list["items"].([]any)
	require.Len(t, items, 1)
	assert.Equal(t, r["id"], items[0].(map[string]any)["id"])
	st, list = d.call("GET", "/v1/routing/decisions?fallback=false&conversation_id="+conv, nil)
	require.Equal(t, 200, st)
	assert.Empty(t, list["items"])
}

func TestEnsembleRepliesAttributeEveryContributor(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("kyra")
	turn := d.post(conv, map[string]any{
		"content":              "Design the API architecture and review the code for security vulnerabilities before we scale the microservices.",
		"strategy":             "ensemble",
		"confidence_threshold": 0.55,
	})
	reply := lastReply(t, turn)
	contributors := strs(reply["contributors"])
	require.GreaterOrEqual(t, len(contributors), 2, reply)
	names := map[string]string{}
	for _, in := range demo.Agents {
		names[in.Slug] = in.Name
	}
	text := reply["content"].(string)
	assert.True(t, strings.HasPrefix(text, "According to "+names[contributors[0]]+" ("), text)
	for _, c := range contributors {
		assert.Contains(t, text, names[c]+" (", "each contributor is named with its skill")
	}
	// The closing sentence every local reply shares is kept once.
	assert.Equal(t, 1, strings.Count(text, "the key points are scope, risks and next steps"), text)
	r := turn["routing"].(map[string]any)
	assert.Equal(t, "ensemble", r["strategy"])
	assert.ElementsMatch(t, contributors, strs(r["answered_by"]))
	assert.Len(t, r["aggregation"], len(contributors))
	assert.Greater(t, r["actual_cost"].(float64), 0.0)
}

func TestCascadeMovesToTheNextAgentWhenOneFails(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	// Luke's model is scripted to fail, Sage's to refuse.
	st, res := d.call("PATCH", "/v1/agents/luke", map[string]any{"model": map[string]any{"script": "fail"}})
	require.Equal(t, 200, st, res)
	st, res = d.call("PATCH", "/v1/agents/sage", map[string]any{"model": map[string]any{"script": "refuse"}})
	require.Equal(t, 200, st, res)
	conv := d.conversation("kyra")
	q := "Review this code for security bugs in the auth function"

	turn := d.post(conv, map[string]any{"content": q, "strategy": "cascade", "k": 3, "confidence_threshold": 0.3})
	r := turn["routing"].(map[string]any)
	order := strs(r["selected_agents"])
	require.Len(t, order, 3)
	require.ElementsMatch(t, []string{"luke", "sage"}, order[:2], "the two best matches come first")
	attempts := r["attempts"].([]any)
	require.Len(t, attempts, 3, "both failures, then an answer")
	outcome := map[string]string{}
	for _, a := range attempts {
		am := a.(map[string]any)
		outcome[am["agent"].(string)] = am["outcome"].(string)
	}
	assert.Equal(t, "failed", outcome["luke"])
	assert.Equal(t, "refused", outcome["sage"])
	assert.Equal(t, "answered", outcome[order[2]])
	assert.Equal(t, order[2], lastReply(t, turn)["agent"])
	assert.Equal(t, "answered", r["outcome"])

	// TOP_1 on the failing agent alone: 502, and the turn is still recorded.
	st, res = d.call("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": "@luke " + q})
	require.Equal(t, 502, st, res)
	errBody := res["error"].(map[string]any)
	assert.Equal(t, "upstream_failed", errBody["code"])
	decisionID := errBody["details"].(map[string]any)["decision_id"].(string)
	st, dec := d.call("GET", "/v1/routing/decisions/"+decisionID, nil)
	require.Equal(t, 200, st)
	assert.Equal(t, "failed", dec["outcome"])
	st, msgs := d.call("GET", "/v1/conversations/"+conv+"/messages?limit=100", nil)
	require.Equal(t, 200, st)
	items := msgs["items"].([]any)
	last := items[len(items)-1].(map[string]any)
	assert.Equal(t, "system", last["role"])
	assert.Contains(t, last["content"], "luke failed")
}

func TestTopKKeepsOneReplyFromTheKAsked(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("kyra")
	turn := d.post(conv, map[string]any{"content": "Which metrics trend down? Analyze the data and chart it.", "strategy": "top_k", "k": 2})
	r := turn["routing"].(map[string]any)
	assert.Equal(t, "top_k", r["strategy"])
	assert.Len(t, r["selected_agents"], 2)
	kept := 0
	for _, a := range r["attempts"].([]any) {
		if a.(map[string]any)["kept"] == true {
			kept++
		}
	}
	assert.Equal(t, 1, kept)
	assert.Len(t, turn["replies"], 1)
	assert.Contains(t, strs(r["selected_agents"]), lastReply(t, turn)["agent"])
}

func TestEveryDecisionIsLoggedAndAnalyticsAnswer(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("kyra")
	posts := []map[string]any{
		{"content": "Please review this function for bugs"},
		{"content": "Can you review this function for bugs again?"},
		{"content": "Write a friendly blog post about our launch"},
		{"content": "Plan the microservices architecture and its API design", "strategy": "ensemble", "confidence_threshold": 0.5},
		{"content": "@dana what do the metrics say"},
	}
	var ids []string
	for _, p := range posts {
		ids = append(ids, d.post(conv, p)["routing"].(map[string]any)["id"].(string))
	}
	st, list := d.call("GET", "/v1/routing/decisions?conversation_id="+conv+"&limit=2", nil)
	require.Equal(t, 200, st, list)
	var got []map[string]any
	for {
		for _, it := range list["items"].([]any) {
			got = append(got, it.(map[string]any))
		}
		next, _ := list["next_token"].(string)
		if next == "" {
			break
		}
		st, list = d.call("GET", "/v1/routing/decisions?conversation_id="+conv+"&limit=2&next_token="+url.QueryEscape(next), nil)
		require.Equal(t, 200, st, list)
	}
	require.Len(t, got, len(posts), "one decision per message, paged")
	for i, dec := range got {
		assert.Equal(t, ids[len(ids)-1-i], dec["id"], "newest first")
		for _, k := range []string{"strategy", "scores", "selected_agents", "confidence_threshold", "fallback_used", "complexity_score", "complexity_dimensions", "selected_tier", "selected_model", "estimated_cost", "actual_cost", "gate_latency_ms", "router_latency_ms"} {
			assert.Contains(t, dec, k)
		}
		assert.Positive(t, dec["router_latency_ms"])
	}
	st, list = d.call("GET", "/v1/routing/decisions?strategy=ensemble", nil)
	require.Equal(t, 200, st)
	require.Len(t, list["items"], 1)
	st, list = d.call("GET", "/v1/routing/decisions?agent=dana", nil)
	require.Equal(t, 200, st)
	for _, it := range list["items"].([]any) {
		assert.Contains(t, strs(it.(map[string]any)["selected_agents"]), "dana")
	}

	st, rep := d.call("GET", "/v1/routing/analytics/agents?query="+url.QueryEscape("review this function for bugs"), nil)
	require.Equal(t, 200, st, rep)
	assert.Equal(t, 2.0, rep["matched_decisions"])
	top := rep["agents"].([]any)[0].(map[string]any)
	assert.Equal(t, "luke", top["agent"])
	assert.Equal(t, 2.0, top["selected"])
	assert.Equal(t, 1.0, top["share"])

	st, rep = d.call("GET", "/v1/routing/analytics/strategies", nil)
	require.Equal(t, 200, st, rep)
	by := map[string]map[string]any{}
	for _, s := range rep["strategies"].([]any) {
		by[s.(map[string]any)["strategy"].(string)] = s.(map[string]any)
	}
	assert.Equal(t, 3.0, by["top_1"]["decisions"])
	assert.Equal(t, 1.0, by["ensemble"]["decisions"])
	assert.Equal(t, 1.0, by["mention"]["avg_confidence"])
	assert.Positive(t, by["ensemble"]["avg_confidence"])

	for _, path := range []string{"/v1/routing/decisions?strategy=best", "/v1/routing/decisions?fallback=maybe", "/v1/routing/decisions?since=yesterday", "/v1/routing/analytics/agents", "/v1/routing/analytics/agents?query=x&min_similarity=2"} {
		st, res := d.call("GET", path, nil)
		assert.Equal(t, 400, st, path)
		assert.Equal(t, "invalid_request", res["error"].(map[string]any)["code"], path)
	}
}

func TestFeedbackFeedsPastPerformance(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("kyra")
	q := "Please review this function for bugs"
	turn := d.post(conv, map[string]any{"content": q})
	reply := lastReply(t, turn)
	require.Equal(t, "luke", reply["agent"])
	st, res := d.call("POST", "/v1/conversations/"+conv+"/messages/"+reply["id"].(string)+"/feedback", map[string]any{"rating": 2, "comment": "missed the race"})
	require.Equal(t, 200, st, res)

	turn = d.post(conv, map[string]any{"content": "Review this function for bugs please"})
	var luke map[string]any
	for _, s := range turn["routing"].(map[string]any)["scores"].([]any) {
		if s.(map[string]any)["agent_slug"] == "luke" {
			luke = s.(map[string]any)
		}
	}
	require.NotNil(t, luke)
	assert.Equal(t, 0.25, luke["past_performance"], "rating 2 → (2-1)/4")
	assert.Equal(t, 1.0, luke["rated_similar"])
	assert.Contains(t, luke["explanation"], "rated 0.25 on 1 similar queries")

	// The rating is on the message; only agent replies can be rated.
	st, msgs := d.call("GET", "/v1/conversations/"+conv+"/messages", nil)
	require.Equal(t, 200, st)
	first := msgs["items"].([]any)[0].(map[string]any)
	assert.Equal(t, "user", first["role"])
	assert.Equal(t, 2.0, msgs["items"].([]any)[1].(map[string]any)["rating"])
	for body, want := range map[string]int{`{"rating":0}`: 400, `{"rating":6}`: 400, `{"rating":"5"}`: 400} {
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &v))
		st, _ := d.call("POST", "/v1/conversations/"+conv+"/messages/"+reply["id"].(string)+"/feedback", v)
		assert.Equal(t, want, st, body)
	}
	st, _ = d.call("POST", "/v1/conversations/"+conv+"/messages/"+first["id"].(string)+"/feedback", map[string]any{"rating": 5})
	assert.Equal(t, 400, st, "a user message cannot be rated")
	st, _ = d.call("POST", "/v1/conversations/"+conv+"/messages/msg_nope/feedback", map[string]any{"rating": 5})
	assert.Equal(t, 404, st)
}

func TestDiscovery(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	st, rec := d.call("GET", "/v1/agents/recommend?query="+url.QueryEscape("help me review this code for bugs"), nil)
	require.Equal(t, 200, st, rec)
	items := rec["items"].([]any)
	require.Len(t, items, 3)
	first := items[0].(map[string]any)
	assert.Equal(t, "luke", first["slug"])
	assert.Equal(t, "Code reviewer with an eye for bugs and readability", first["tagline"])
	assert.Equal(t, []string{"code-review"}, strs(first["matching_skills"]))
	assert.LessOrEqual(t, len([]rune(first["personality_preview"].(string))), 100)
	assert.GreaterOrEqual(t, first["overall"].(float64), items[1].(map[string]any)["overall"].(float64), "best first, by overall")
	assert.Equal(t, "code-review", first["skill"])
	assert.GreaterOrEqual(t, first["confidence"].(float64), 0.6, "the calibrated confidence")
	assert.Equal(t, "luke", rec["routed_to"])
	assert.Equal(t, false, rec["declined"])
	assert.Equal(t, 0.6, rec["confidence_threshold"])
	// Nobody is confident at 1: the team's default agent would answer.
	st, rec = d.call("GET", "/v1/agents/recommend?confidence_threshold=1&query="+url.QueryEscape("help me review this code for bugs"), nil)
	require.Equal(t, 200, st, rec)
	assert.Equal(t, "kyra", rec["routed_to"])
	assert.Equal(t, true, rec["declined"])
	st, _ = d.call("GET", "/v1/agents/recommend", nil)
	assert.Equal(t, 400, st)
	for _, bad := range []string{"abc", "1.5", "-0.1", "NaN", ""} {
		st, body := d.call("GET", "/v1/agents/recommend?query=review&confidence_threshold="+url.QueryEscape(bad), nil)
		assert.Equal(t, 400, st, bad)
		assert.Equal(t, "confidence_threshold", body["error"].(map[string]any)["field"], bad)
	}

	// Experts by required skills: coverage first, then availability.
	st, ex := d.call("GET", "/v1/agents/experts?skills=code-review,security&exclude=kyra", nil)
	require.Equal(t, 200, st, ex)
	list := ex["items"].([]any)
	require.Len(t, list, 2)
	for _, it := range list {
		assert.Equal(t, 0.5, it.(map[string]any)["skill_coverage"])
	}
	st, ex = d.call("GET", "/v1/agents/experts?skills=review", nil)
	require.Equal(t, 200, st)
	got := []string{}
	for _, it := range ex["items"].([]any) {
		got = append(got, it.(map[string]any)["slug"].(string))
	}
	assert.Equal(t, []string{"luke", "sage"}, got, "both review; equal coverage and load, so by slug")
	// Pausing Luke moves him behind an available agent of equal coverage.
	st, _ = d.call("POST", "/v1/agents/luke/pause", nil)
	require.Equal(t, 200, st)
	st, ex = d.call("GET", "/v1/agents/experts?skills=review", nil)
	require.Equal(t, 200, st)
	assert.Equal(t, "sage", ex["items"].([]any)[0].(map[string]any)["slug"])
	st, av := d.call("GET", "/v1/agents/luke/availability", nil)
	require.Equal(t, 200, st)
	assert.Equal(t, false, av["available"])
	assert.Equal(t, "agent is paused", av["reason"])
	st, av = d.call("GET", "/v1/agents/dana/availability", nil)
	require.Equal(t, 200, st)
	assert.Equal(t, true, av["available"])
	assert.Equal(t, 0.0, av["active_tasks"])
	st, _ = d.call("GET", "/v1/agents/nobody/availability", nil)
	assert.Equal(t, 404, st)
	st, _ = d.call("GET", "/v1/agents/experts", nil)
	assert.Equal(t, 400, st)
}

func TestBadChatInputChangesNothing(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("kyra")
	for _, body := range []map[string]any{
		{"content": ""}, {"content": "   "}, {"content": strings.Repeat("x", conversations.MaxContent+1)},
		{"content": "hi", "strategy": "best"}, {"content": "hi", "k": 9}, {"content": "hi", "confidence_threshold": 1.5},
		{"content": "hi", "unknown": true},
	} {
		st, res := d.call("POST", "/v1/conversations/"+conv+"/messages", body)
		assert.Equal(t, 400, st, body)
		assert.Equal(t, "invalid_request", res["error"].(map[string]any)["code"], body)
	}
	st, c := d.call("GET", "/v1/conversations/"+conv, nil)
	require.Equal(t, 200, st)
	assert.Equal(t, 0.0, c["message_count"])
	st, list := d.call("GET", "/v1/routing/decisions?conversation_id="+conv, nil)
	require.Equal(t, 200, st)
	assert.Empty(t, list["items"])

	st, _ = d.call("POST", "/v1/conversations", map[string]any{"agent": "nobody"})
	assert.Equal(t, 404, st)
	st, _ = d.call("POST", "/v1/agents/wren/pause", nil)
	require.Equal(t, 200, st)
	st, res := d.call("POST", "/v1/conversations", map[string]any{"agent": "wren"})
	assert.Equal(t, 409, st, res)

	st, _ = d.call("POST", "/v1/conversations/"+conv+"/close", nil)
	require.Equal(t, 200, st)
	st, res = d.call("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": "hello?"})
	assert.Equal(t, 409, st, res)
	st, _ = d.call("POST", "/v1/conversations/"+conv+"/close", nil)
	assert.Equal(t, 409, st)
	st, _ = d.call("POST", "/v1/conversations/conv_nope/messages", map[string]any{"content": "hello?"})
	assert.Equal(t, 404, st)
}

func TestConversationsAreIsolatedBetweenTeams(t *testing.T) {
	e := mustEnv(t)
	a, b := mustDemoTeam(t, e), mustDemoTeam(t, e)
	conv := a.conversation("kyra")
	reply := lastReply(t, a.post(conv, map[string]any{"content": "review my code for bugs"}))
	for _, req := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/conversations/" + conv, nil}, {"GET", "/v1/conversations/" + conv + "/messages", nil},
		{"POST", "/v1/conversations/" + conv + "/messages", map[string]any{"content": "mine now"}}, {"POST", "/v1/conversations/" + conv + "/close", nil},
		{"POST", "/v1/conversations/" + conv + "/messages/" + reply["id"].(string) + "/feedback", map[string]any{"rating": 1}},
		{"GET", "/v1/routing/decisions/" + reply["decision_id"].(string), nil},
	} {
		st, _ := b.call(req.method, req.path, req.body)
		assert.Equal(t, 404, st, req)
	}
	st, list := b.call("GET", "/v1/conversations", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, list["items"])
	st, list = b.call("GET", "/v1/routing/decisions", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, list["items"])
	// And A's conversation is untouched.
	st, c := a.call("GET", "/v1/conversations/"+conv, nil)
	require.Equal(t, 200, st)
	assert.Equal(t, "open", c["status"])
	assert.Equal(t, 2.0, c["message_count"])
}

// concurrentTurns is how many turns TestConcurrentTurnsKeepTheConversationConsistent
// sends at once to one conversation: ten, each answering 201 within the
// 29 s function limit (the edge answers 500 for a function past its
// timeout). On moto behind the edge's write lock 6–8 of ten failed.
const concurrentTurns = 10

// Concurrent turns in one conversation all commit within the function's
// deadline (the version condition retries the loser; a turn that could not
// commit in time would answer 503 and store nothing), and the
// conversation counters stay exact.
func TestConcurrentTurnsKeepTheConversationConsistent(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("kyra")
	questions := []string{"review my code for bugs", "write a blog post", "analyze the metrics data", "@archie design the api", "threat model our auth",
		"help me plan", "review this function for race conditions", "draft a release note", "what do the latency metrics say", "@luke check this diff"}
	require.LessOrEqual(t, concurrentTurns, len(questions))
	qs := questions[:concurrentTurns]
	var wg sync.WaitGroup
	status := make([]int, len(qs))
	answers := make([]map[string]any, len(qs))
	took := make([]time.Duration, len(qs))
	for i, q := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			status[i], answers[i] = d.call("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": q})
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	// The figure docs/measurements.md records (go test -v): how long the slowest of
	// the ten took, against the 29 s function limit. Not asserted: the
	// edge answers 500 past the limit, which the status check catches.
	t.Logf("%d concurrent turns in one conversation: slowest %s, statuses %v", len(qs), slices.Max(took).Round(time.Millisecond), status)
	committed := map[string]bool{}
	for i, st := range status {
		assert.Equal(t, 201, st, "%s: %v", qs[i], answers[i])
		if st == 201 {
			committed[answers[i]["user_message"].(map[string]any)["id"].(string)] = true
		}
	}
	st, c := d.call("GET", "/v1/conversations/"+conv, nil)
	require.Equal(t, 200, st)
	st, msgs := d.call("GET", "/v1/conversations/"+conv+"/messages?limit=100", nil)
	require.Equal(t, 200, st)
	assert.Equal(t, float64(len(msgs["items"].([]any))), c["message_count"])
	assert.Equal(t, float64(1+len(committed)), c["version"], "one version per turn that answered 201")
	for _, m := range msgs["items"].([]any) {
		if m := m.(map[string]any); m["role"] == "user" {
			assert.True(t, committed[m["id"].(string)], "a turn that answered with an error was stored: %v", m)
		}
	}

	loads, err := e.db.gate.AgentLoads(context.Background(), d.id)
	require.NoError(t, err)
	total := 0
	for slug, l := range loads.All() {
		total += l.ActiveConversations
		if slug == c["current_agent"] {
			assert.Equal(t, 1, l.ActiveConversations, slug)
		} else {
			assert.Zero(t, l.ActiveConversations, slug)
		}
	}
	assert.Equal(t, 1, total, "one open conversation, counted once for its current agent")
	st, _ = d.call("POST", "/v1/conversations/"+conv+"/close", nil)
	require.Equal(t, 200, st)
	loads, err = e.db.gate.AgentLoads(context.Background(), d.id)
	require.NoError(t, err)
	for slug, l := range loads.All() {
		assert.Zero(t, l.ActiveConversations, slug)
	}
}

// countingGate counts calls to the real gate client.
type countingGate struct {
	inner expertgate.Gate
	mu    sync.Mutex
	n     int
	// skillsOnly counts the calls that asked for the skill match alone.
	skillsOnly int
}

func (g *countingGate) Score(ctx context.Context, r expertgate.Request) (expertgate.Response, error) {
	g.mu.Lock()
	g.n++
	if r.SkillsOnly {
		g.skillsOnly++
	}
	g.mu.Unlock()
	return g.inner.Score(ctx, r)
}

// With collaboration off (prod's default) every message goes to the
// conversation's agent as before routing existed: no mention, router or
// gate is consulted. With it on, the same service routes (the AgentRouter,
// with the gate flag off, asking the gate for the skill match alone).
func TestFlagsOffIsDirectDispatch(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	ctx := context.Background()
	gate := &countingGate{inner: &gateclient.Client{Lambda: lambdaClient(e), FunctionName: e.names.Function("expert-gate")}}
	router := &cascade.Router{Gate: gate, Tiers: routing.DefaultTierModels}
	svc := conversations.MustNew(conversations.Config{Store: e.db.convs, Agents: e.db.convs, Router: router, Model: localmodelwiring.New(e.db.agents)})
	conv, err := svc.Create(ctx, d.id, conversations.CreateInput{Agent: "kyra"})
	require.NoError(t, err)

	for _, q := range []string{"@dana look at this", "Can you review this Go function for bugs?", "go back to Luke"} {
		res, err := svc.Post(ctx, d.id, conv.ID, conversations.PostInput{Content: q, Strategy: "ensemble"})
		require.NoError(t, err, q)
		require.Len(t, res.Replies, 1, q)
		assert.Equal(t, "kyra", res.Replies[0].Agent, q)
		assert.Equal(t, routing.Direct, res.Routing.Strategy)
		assert.Equal(t, routing.ReasonDirect, res.Routing.Reason)
		assert.Empty(t, res.Routing.Scores)
		assert.Len(t, res.Routing.Dimensions, 5, "complexity and tier are still recorded")
	}
	assert.Zero(t, gate.n, "the gate is never called")

	// Collaboration on, gate off: the AgentRouter.
	router.Flags = cascade.Flags{Collaboration: true}
	res, err := svc.Post(ctx, d.id, conv.ID, conversations.PostInput{Content: "Can you review this Go function for bugs?"})
	require.NoError(t, err)
	assert.Equal(t, "luke", res.Replies[0].Agent)
	assert.Equal(t, routing.Router, res.Routing.Strategy)
	assert.Equal(t, routing.ReasonSkill, res.Routing.Reason)
	// It ranks with the gate's skill match alone (docs/routing.md).
	assert.Equal(t, 1, gate.n)
	assert.Equal(t, 1, gate.skillsOnly)

	// Gate on, ensemble off: ENSEMBLE is downgraded to TOP_1.
	router.Flags = cascade.Flags{Collaboration: true, ExpertGate: true}
	res, err = svc.Post(ctx, d.id, conv.ID, conversations.PostInput{Content: "Design the API architecture and review the code for security", Strategy: "ensemble", Threshold: ptr(0.5)})
	require.NoError(t, err)
	assert.Equal(t, 2, gate.n)
	assert.Equal(t, 1, gate.skillsOnly, "the gate scores in full")
	assert.Equal(t, routing.Top1, res.Routing.Strategy)
	assert.Equal(t, routing.Ensemble, res.Routing.RequestedStrategy)
	require.Len(t, res.Replies, 1)
	assert.Empty(t, res.Replies[0].Contributors)

	decisions := &cascade.Service{Store: e.db.decisions}
	list, _, err := decisions.Decisions(ctx, d.id, cascade.DecisionFilter{ConversationID: conv.ID}, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Len(t, list, 5, "every decision is logged, direct dispatch included")
	assert.False(t, list[len(list)-1].Flags.Collaboration)
}

// The cascade's per-attempt deadline: an agent whose model hangs uses only
// its share of the turn, and the next agent answers.
func TestCascadeTimeoutMovesOn(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	ctx := context.Background()
	_, err := agents.NewService(e.db.agents).Update(ctx, d.id, "luke", agents.UpdateInput{Model: &agents.Model{Script: "timeout"}})
	require.NoError(t, err)
	gate := &gateclient.Client{Lambda: lambdaClient(e), FunctionName: e.names.Function("expert-gate")}
	router := &cascade.Router{Gate: gate, Flags: cascade.Flags{Collaboration: true, ExpertGate: true, Ensemble: true}}
	svc := conversations.MustNew(conversations.Config{Store: e.db.convs, Agents: e.db.convs, Router: router, Model: localmodelwiring.New(e.db.agents), Budget: 3 * time.Second})
	conv, err := svc.Create(ctx, d.id, conversations.CreateInput{})
	require.NoError(t, err)
	res, err := svc.Post(ctx, d.id, conv.ID, conversations.PostInput{Content: "review this function for bugs", Strategy: "cascade", K: ptr(2), Threshold: ptr(0.3)})
	require.NoError(t, err)
	require.Len(t, res.Routing.Attempts, 2)
	assert.Equal(t, "luke", res.Routing.Attempts[0].Agent)
	assert.Equal(t, cascade.OutcomeTimedOut, res.Routing.Attempts[0].Outcome)
	assert.Less(t, res.Routing.Attempts[0].LatencyMS, int64(2000), "half of the 3 s budget, not all of it")
	assert.Equal(t, cascade.OutcomeAnswered, res.Routing.Attempts[1].Outcome)
	assert.Equal(t, res.Routing.Attempts[1].Agent, res.Replies[len(res.Replies)-1].Agent)
}

func lambdaClient(e env) *lambda.Client { return lambda.NewFromConfig(e.cfg) }
