//go:build integration

// Collaboration sessions against the local cloud, through the HTTP API:
// each pattern's state machine executed by moto, every state calling the
// session-steps function through the edge, the stages recorded as tasks
// in the real table, failures on the sessions dead-letter queue.
package cloud_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// sonnet is a priced model id: the local model answers, the cost is real.
const sonnet = "anthropic.claude-3-5-sonnet-20240620-v1:0"

// script gives a demo agent of the team a local model script.
func (d demoTeam) script(e env, slug, script string) {
	d.t.Helper()
	_, err := agents.NewService(e.db.agents).Update(context.Background(), d.id, slug, agents.UpdateInput{
		Model: &agents.Model{Provider: "local", ID: sonnet, Script: script}})
	require.NoError(d.t, err)
}

func part(agent, role string, stage int) map[string]any {
	p := map[string]any{"agent": agent, "role": role}
	if stage > 0 {
		p["stage"] = stage
	}
	return p
}

// start creates a session (201 expected) and returns its id.
func (d demoTeam) start(body map[string]any) string {
	d.t.Helper()
	if body["lead"] == nil {
		body["lead"] = "kyra"
	}
	if body["goal"] == nil {
		body["goal"] = "Plan the launch of the developer tool"
	}
	st, s := d.call("POST", "/v1/sessions", body)
	require.Equal(d.t, 201, st, s)
	assert.Equal(d.t, "planning", s["status"])
	return s["id"].(string)
}

// waitSession polls the session until its status is one of want.
func (d demoTeam) waitSession(id string, within time.Duration, want ...string) map[string]any {
	d.t.Helper()
	if len(want) == 0 {
		want = []string{"completed", "failed", "timed_out", "cancelled"}
	}
	deadline := time.Now().Add(within)
	var s map[string]any
	for time.Now().Before(deadline) {
		var st int
		st, s = d.call("GET", "/v1/sessions/"+id, nil)
		require.Equal(d.t, 200, st, s)
		if slices.Contains(want, s["status"].(string)) {
			return s
		}
		time.Sleep(250 * time.Millisecond)
	}
	d.t.Fatalf("session %s is %v after %s (want %v): %v", id, s["status"], within, want, s)
	return nil
}

func (d demoTeam) trace(id string) map[string]any {
	d.t.Helper()
	st, tr := d.call("GET", "/v1/sessions/"+id+"/trace", nil)
	require.Equal(d.t, 200, st, tr)
	return tr
}

func messageTypes(tr map[string]any) (types, statuses []string) {
	for _, m := range tr["messages"].([]any) {
		mm := m.(map[string]any)
		types = append(types, mm["message_type"].(string))
		statuses = append(statuses, mm["status"].(string))
	}
	return types, statuses
}

// history is the session execution's state names, once it has ended.
func history(t *testing.T, e env, arn string) (sfntypes.ExecutionStatus, []string) {
	t.Helper()
	d, h := waitExecution(t, sfn.NewFromConfig(e.cfg), arn)
	return d.Status, statesEntered(h)
}

func TestSessionEveryPatternCompletesThroughTheAPI(t *testing.T) {
	e := mustEnv(t)
	cases := []struct {
		pattern string
		parts   []any
		states  []string
	}{
		{"supervisor_worker", []any{part("luke", "worker", 0), part("archie", "worker", 0), part("sage", "worker", 0)}, []string{"Begin", "Plan", "Workers", "Stage", "Synthesize", "Complete"}},
		{"pipeline", []any{part("luke", "worker", 1), part("archie", "worker", 2), part("sage", "worker", 3)}, []string{"Begin", "Stages", "Stage", "Synthesize", "Complete"}},
		{"peer_review", []any{part("wren", "worker", 0), part("luke", "reviewer", 0), part("sage", "reviewer", 0)}, []string{"Begin", "Propose", "Reviews", "Decide", "Converged", "Synthesize", "Complete"}},
		{"brainstorm", []any{part("luke", "contributor", 0), part("archie", "contributor", 0), part("sage", "contributor", 0)}, []string{"Begin", "Contributions", "Stage", "Synthesize", "Complete"}},
		{"consensus", []any{part("luke", "contributor", 0), part("archie", "contributor", 0), part("sage", "contributor", 0)}, []string{"Begin", "Votes", "Decide", "Decided", "Synthesize", "Complete"}},
	}
	for _, c := range cases {
		t.Run(c.pattern, func(t *testing.T) {
			d := mustDemoTeam(t, e)
			id := d.start(map[string]any{"pattern": c.pattern, "participants": c.parts})
			s := d.waitSession(id, 60*time.Second)
			require.Equal(t, "completed", s["status"], s)
			assert.NotEmpty(t, s["final_output"])
			assert.NotEmpty(t, s["stage_outputs"])
			for _, o := range s["stage_outputs"].([]any) {
				assert.NotEmpty(t, o.(map[string]any)["output"])
			}
			for _, p := range s["participants"].([]any) {
				pm := p.(map[string]any)
				assert.Equal(t, "completed", pm["status"], pm)
				assert.NotEmpty(t, pm["task_id"], "every stage is a task of the task model")
			}
			assert.Contains(t, s["console_url"], "states/home")
			tr := d.trace(id)
			assert.Positive(t, tr["total_turns"])
			assert.Positive(t, tr["model_calls"])
			status, states := history(t, e, s["execution_arn"].(string))
			assert.Equal(t, sfntypes.ExecutionStatusSucceeded, status)
			for _, want := range c.states {
				assert.Contains(t, states, want)
			}
			assert.True(t, strings.HasSuffix(s["execution_arn"].(string), ":"+id), "the execution is named by the session id")
		})
	}
}

func peerReviewBody(rounds int) map[string]any {
	return map[string]any{"pattern": "peer_review", "goal": "Write the API docs", "max_rounds": rounds,
		"participants": []any{part("wren", "worker", 0), part("luke", "reviewer", 0)}}
}

func TestSessionPeerReviewLoopsUntilApproval(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "luke", "approve-after:3")
	id := d.start(peerReviewBody(5))
	s := d.waitSession(id, 60*time.Second)
	require.Equal(t, "completed", s["status"], s)
	assert.EqualValues(t, 3, s["rounds"])
	tr := d.trace(id)
	assert.Equal(t, "converged", tr["outcome"])
	types, _ := messageTypes(tr)
	assert.Equal(t, []string{"proposal", "critique", "revision", "critique", "revision", "approval", "approval"}, types)
	_, states := history(t, e, s["execution_arn"].(string))
	assert.GreaterOrEqual(t, count(states, "Revise"), 2, "the machine looped")
}

func TestSessionPeerReviewFailsAtMaxRounds(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "luke", "never-approve")
	id := d.start(peerReviewBody(2))
	s := d.waitSession(id, 60*time.Second)
	require.Equal(t, "failed", s["status"], s)
	assert.Equal(t, "MaxRoundsReached", s["status_reason"])
	tr := d.trace(id)
	assert.Equal(t, "max_rounds", tr["outcome"])
	types, _ := messageTypes(tr)
	assert.Equal(t, "rejection", types[len(types)-1], "the last round's verdict is a rejection")
	status, states := history(t, e, s["execution_arn"].(string))
	assert.Equal(t, sfntypes.ExecutionStatusFailed, status)
	assert.Contains(t, states, "MaxRounds")
}

func TestSessionProtocolViolationIsRefusedAndRecorded(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "luke", "violate:1")
	id := d.start(peerReviewBody(3))
	s := d.waitSession(id, 60*time.Second)
	require.Equal(t, "completed", s["status"], s)
	tr := d.trace(id)
	assert.EqualValues(t, 1, tr["refused_messages"])
	types, statuses := messageTypes(tr)
	assert.Equal(t, []string{"proposal", "revision", "approval", "approval"}, types)
	assert.Equal(t, "refused", statuses[1], "the reviewer's revision without a critique is refused")
	assert.Contains(t, tr["messages"].([]any)[1].(map[string]any)["violation"], "rule 3")
	assert.EqualValues(t, 1, s["rounds"], "the session did not advance on the refused message")
}

func TestSessionConsensusNeedsASecondRound(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "archie", "approve-after:2")
	d.script(e, "sage", "approve-after:2")
	id := d.start(map[string]any{"pattern": "consensus", "goal": "Ship on Friday?", "participants": []any{
		part("luke", "contributor", 0), part("archie", "contributor", 0), part("sage", "contributor", 0), part("wren", "contributor", 0)}})
	s := d.waitSession(id, 60*time.Second)
	require.Equal(t, "completed", s["status"], s)
	assert.EqualValues(t, 2, s["rounds"])
	tr := d.trace(id)
	assert.Contains(t, tr["convergence_reason"], "two-thirds majority to approve in round 2")
	types, _ := messageTypes(tr)
	assert.Equal(t, 8, count(types, "vote"), "four voters, two rounds")
	_, states := history(t, e, s["execution_arn"].(string))
	assert.Equal(t, 2, count(states, "Votes"))
}

func TestSessionOverspendEndsBudgetExhaustedWithNoCallAfterTheCap(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	for _, a := range []string{"luke", "archie", "sage"} {
		d.script(e, a, "overspend")
	}
	id := d.start(map[string]any{"pattern": "brainstorm", "max_cost_usd": 0.1, "participants": []any{
		part("luke", "contributor", 0), part("archie", "contributor", 0), part("sage", "contributor", 0)}})
	s := d.waitSession(id, 60*time.Second)
	require.Equal(t, "failed", s["status"], s)
	assert.Equal(t, "BudgetExhausted", s["status_reason"])
	assert.LessOrEqual(t, s["total_cost_usd"].(float64), 0.1)
	calls := s["model_calls"]
	// Three calls were made at most: two charged, the one that would
	// have crossed the cap refused; nothing after it.
	time.Sleep(2 * time.Second)
	_, again := d.call("GET", "/v1/sessions/"+id, nil)
	assert.Equal(t, calls, again["model_calls"])
	assert.EqualValues(t, 1, count(stageKinds(again), "contribution"), "one contribution was stored before the cap")
	status, _ := history(t, e, s["execution_arn"].(string))
	assert.Equal(t, sfntypes.ExecutionStatusFailed, status)
}

func stageKinds(s map[string]any) []string {
	var out []string
	for _, o := range s["stage_outputs"].([]any) {
		out = append(out, o.(map[string]any)["kind"].(string))
	}
	return out
}

func count(list []string, v string) int {
	n := 0
	for _, x := range list {
		if x == v {
			n++
		}
	}
	return n
}

func TestSessionAnotherTeamGetsNotFoundOnEveryRoute(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	other := mustDemoTeam(t, e)
	id := d.start(map[string]any{"pattern": "brainstorm", "participants": []any{part("luke", "contributor", 0), part("archie", "contributor", 0)}})
	for _, r := range []struct{ method, path string }{
		{"GET", ""}, {"GET", "/trace"}, {"POST", "/cancel"}, {"POST", "/approve"}, {"POST", "/resume"},
	} {
		var body any
		if r.path == "/approve" {
			body = map[string]any{"decision": "approve"}
		}
		st, res := other.call(r.method, "/v1/sessions/"+id+r.path, body)
		assert.Equal(t, 404, st, "%s %s: %v", r.method, r.path, res)
	}
	st, list := other.call("GET", "/v1/sessions", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, list["items"])
	d.waitSession(id, 60*time.Second)
}

func TestSessionCreateValidatesAndIsIdempotent(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	st, res := d.call("POST", "/v1/sessions", map[string]any{"pattern": "peer_review", "lead": "kyra", "goal": "g",
		"participants": []any{part("luke", "reviewer", 0), part("archie", "reviewer", 0)}})
	assert.Equal(t, 400, st)
	assert.Equal(t, "participants", res["error"].(map[string]any)["field"])
	st, res = d.call("POST", "/v1/sessions", map[string]any{"pattern": "brainstorm", "lead": "kyra", "goal": "g", "max_cost_usd": 0.75,
		"participants": []any{part("luke", "contributor", 0), part("archie", "contributor", 0)}})
	assert.Equal(t, 400, st)
	assert.Equal(t, "max_cost_usd", res["error"].(map[string]any)["field"])

	body := map[string]any{"pattern": "brainstorm", "lead": "kyra", "goal": "Ideas", "participants": []any{part("luke", "contributor", 0), part("archie", "contributor", 0)}}
	key := fmt.Sprintf("ses-%d", time.Now().UnixNano())
	first := d.do("POST", "/v1/sessions", body, "Idempotency-Key", key)
	second := d.do("POST", "/v1/sessions", body, "Idempotency-Key", key)
	require.Equal(t, 201, first.Status, string(first.Body))
	assert.Equal(t, first.JSON(t)["id"], second.JSON(t)["id"], "the same key creates one session")
	st, list := d.call("GET", "/v1/sessions?pattern=brainstorm&agent=luke", nil)
	require.Equal(t, 200, st)
	assert.Len(t, list["items"], 1)
	d.waitSession(first.JSON(t)["id"].(string), 60*time.Second)
}

// do sends a request with headers (name, value pairs).
func (d demoTeam) do(method, path string, body any, headers ...string) apitest.Response {
	d.t.Helper()
	return apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: d.t}.Do(method, path, body, headers...)
}

// The collab:<id> channel reaches the participants: each is invited and
// updated after each stage; the final output lands in the conversation the
// session was started from, as the lead's message naming its contributors
// (posted by the result-poster function when the session ends). A
// conversation that is not the team's is 404.
func TestSessionCollabChannelAndConversationOutput(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	st, res := d.call("POST", "/v1/sessions", map[string]any{"pattern": "brainstorm", "lead": "kyra", "goal": "g", "conversation_id": "conv_nope",
		"participants": twoContributors("luke", "archie")})
	assert.Equal(t, 404, st, res)
	assert.Equal(t, "not_found", res["error"].(map[string]any)["code"])

	conv := d.conversation("kyra")
	id := d.start(map[string]any{"pattern": "brainstorm", "conversation_id": conv, "participants": twoContributors("luke", "archie")})
	s := d.waitSession(id, 60*time.Second)
	require.Equal(t, "completed", s["status"], s)

	require.Eventually(t, func() bool {
		kinds := map[string]int{}
		for _, m := range d.inbox("luke") {
			if m["channel"] == "collab:"+id {
				kinds[m["type"].(string)]++
			}
		}
		return kinds["collab_invite"] == 1 && kinds["collab_update"] >= 2
	}, 20*time.Second, 250*time.Millisecond, "luke is invited and updated on collab:%s", id)
	d.send("archie", map[string]any{"channel": "collab:" + id, "content": "thanks all"})

	var last map[string]any
	require.Eventually(t, func() bool {
		if found := d.results(conv, id); len(found) == 1 {
			last = found[0]
		}
		return last != nil
	}, 30*time.Second, 250*time.Millisecond, "the final output reaches the conversation")
	assert.Equal(t, "collaboration", last["strategy"])
	assert.Equal(t, map[string]any{"type": "session", "id": id, "status": "completed", "agent": "kyra"}, last["result_of"])
	assert.Equal(t, "kyra", last["agent"])
	assert.Equal(t, s["final_output"], last["content"])
	assert.ElementsMatch(t, []any{"luke", "archie"}, last["contributors"])
}

func TestSessionListPagesThroughEverySessionOnce(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, d.start(map[string]any{"pattern": "brainstorm", "participants": twoContributors("luke", "archie")}))
	}
	var seen []string
	next := ""
	for page := 0; page < 5; page++ {
		path := "/v1/sessions?limit=2"
		if next != "" {
			path += "&next_token=" + next
		}
		st, res := d.call("GET", path, nil)
		require.Equal(t, 200, st, res)
		for _, it := range res["items"].([]any) {
			seen = append(seen, it.(map[string]any)["id"].(string))
		}
		next, _ = res["next_token"].(string)
		if next == "" {
			break
		}
	}
	slices.Reverse(ids)
	assert.Equal(t, ids, seen, "newest first, each once")
	st, res := d.call("GET", "/v1/sessions?status=bogus", nil)
	assert.Equal(t, 400, st, res)
	for _, id := range ids {
		d.waitSession(id, 60*time.Second)
	}
}
