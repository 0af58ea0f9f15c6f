//go:build integration

// Outbound A2A (issue 28, item 2): an external agent served by the
// official Python SDK (localstack/a2aserver/server.py, a2a-sdk 1.3.0) on
// loopback is registered as a team member by its card URL; the gate
// routes a question to it, a Conclave agent delegates to it and gets its
// answer back into the parent task and the conversation, a slow answer
// is waited for in the delegation machine's Wait state, and a remote
// agent that hangs ends the task timed_out at its deadline (the remote
// task canceled). Nothing of the team's (its API key) goes out.
package cloud_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// a2aRemote is the package's external A2A agent.
type a2aRemote struct {
	url, token, name, log string
}

var (
	a2aRemoteOnce sync.Once
	a2aRemoteSrv  a2aRemote
	a2aRemoteErr  error
)

// startA2ARemote returns the external agent, started on first use with
// the test tools' Python (make test installs a2a-sdk there) and killed
// with the test binary. No venv is a failure, not a skip.
func startA2ARemote(t *testing.T) a2aRemote {
	t.Helper()
	a2aRemoteOnce.Do(func() { a2aRemoteSrv, a2aRemoteErr = launchA2ARemote() })
	require.NoError(t, a2aRemoteErr)
	return a2aRemoteSrv
}

func launchA2ARemote() (a2aRemote, error) {
	root, python, err := toolsPython()
	if err != nil {
		return a2aRemote{}, err
	}
	dir, err := os.MkdirTemp("", "a2aremote")
	if err != nil {
		return a2aRemote{}, err
	}
	srv := a2aRemote{token: fmt.Sprintf("remote-token-%d", time.Now().UnixNano()), name: "Remote Tax Desk", log: filepath.Join(dir, "calls.jsonl")}
	cmd := exec.Command(python, filepath.Join(root, "localstack", "a2aserver", "server.py"),
		"--token", srv.token, "--name", srv.name, "--log", srv.log)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return a2aRemote{}, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return a2aRemote{}, err
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var line struct{ URL string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.URL != "" {
				ready <- line.URL
			}
		}
	}()
	select {
	case srv.url = <-ready:
		return srv, nil
	case <-time.After(120 * time.Second):
		_ = cmd.Process.Kill()
		return a2aRemote{}, fmt.Errorf("the A2A server did not start in 120 s")
	}
}

// calls are the JSON-RPC requests the server received.
func (s a2aRemote) calls(t *testing.T) []map[string]any {
	t.Helper()
	f, err := os.Open(s.log)
	require.NoError(t, err)
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := map[string]any{}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		out = append(out, m)
	}
	return out
}

// callsWith are the calls whose message mentions marker.
func (s a2aRemote) callsWith(t *testing.T, marker string) []map[string]any {
	var out []map[string]any
	for _, c := range s.calls(t) {
		if texts, _ := c["texts"].([]any); len(texts) > 0 && strings.Contains(fmt.Sprint(texts...), marker) {
			out = append(out, c)
		}
	}
	return out
}

// registerRemote makes the server the team's agent tax-desk.
func (d demoTeam) registerRemote(srv a2aRemote) map[string]any {
	d.t.Helper()
	st, a := d.call("POST", "/v1/agents", map[string]any{"slug": "tax-desk", "name": "Tax Desk",
		"a2a": map[string]any{"card_url": srv.url, "credential": srv.token}})
	require.Equal(d.t, 201, st, a)
	return a
}

// waitTaskEnds polls the task until it leaves queued and running.
func (d demoTeam) waitTaskEnds(id string, within time.Duration) map[string]any {
	d.t.Helper()
	deadline := time.Now().Add(within)
	for {
		tk := d.task(id)
		if s := tk["status"]; s != "queued" && s != "running" {
			return tk
		}
		require.True(d.t, time.Now().Before(deadline), "task %s still %s after %s", id, tk["status"], within)
		time.Sleep(300 * time.Millisecond)
	}
}

func TestAnExternalA2AAgentIsATeamMember(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	other := mustDemoTeam(t, e)
	srv := startA2ARemote(t)

	// Registered by its card: the card's skills, normalized to the skill
	// rules (an id "Tax Planning & Strategy!!" becomes a skill name), its
	// description as the tagline, the credential kept and never shown.
	a := d.registerRemote(srv)
	var names []string
	for _, s := range a["skills"].([]any) {
		names = append(names, s.(map[string]any)["name"].(string))
	}
	assert.Equal(t, []string{"vat-returns", "tax-planning-strategy"}, names)
	assert.Equal(t, "a2a", a["model"].(map[string]any)["provider"])
	r := a["a2a"].(map[string]any)
	assert.Equal(t, true, r["available"])
	assert.Equal(t, true, r["has_credential"])
	assert.Equal(t, "1.0", r["protocol_version"])
	assert.Equal(t, srv.name, r["card_name"])
	assert.Contains(t, a["tagline"], "VAT returns")
	raw, _ := json.Marshal(a)
	assert.NotContains(t, string(raw), srv.token, "the credential is never shown")
	// Kept in Secrets Manager under the stage's A2A prefix, the team and the agent.
	assert.Equal(t, []string{srv.token}, d.secretsUnder(e, manifest.A2ASecretsPrefix(e.names.Stage)+d.id+"/tax-desk/"))
	// Another team does not see it.
	st, _ := other.call("GET", "/v1/agents/tax-desk", nil)
	assert.Equal(t, 404, st)

	// The gate routes a question of its skills to it, and the answer is
	// the remote agent's.
	conv := d.conversation("")
	q := "How do I file my quarterly VAT return and reclaim the input tax on my invoices? (vat-chat)"
	turn := d.post(conv, map[string]any{"content": q})
	reply := lastReply(t, turn)
	assert.Equal(t, "tax-desk", reply["agent"], turn["routing"])
	assert.Equal(t, "Remote answer from "+srv.name+": "+q, reply["content"])
	sent := srv.callsWith(t, "(vat-chat)")
	require.Len(t, sent, 1, "one message went out")
	assert.Equal(t, []any{q}, sent[0]["texts"], "the user's message alone: no system prompt, roster or memories")

	// A Conclave agent delegates to it: the remote answer comes back into
	// the parent task and, through it, into the conversation.
	_, err := agents.NewService(e.db.agents).Create(context.Background(), d.id, agents.CreateInput{
		Slug: "lead", Name: "Lead", Model: &agents.Model{Script: "delegate:tax-desk"},
		Skills: []agents.Skill{{Name: "coordination", Description: "coordinates the team", Priority: 10}},
	})
	require.NoError(t, err)
	conv2, last := d.chat()
	st, parent := d.call("POST", "/v1/tasks", map[string]any{"assignee": "lead", "title": "VAT question",
		"instructions": "Ask the tax desk how to reclaim input VAT (vat-delegated)", "conversation_id": conv2, "execute": true})
	require.Equal(t, 201, st, parent)
	pid := parent["id"].(string)
	done := d.waitTaskEnds(pid, 90*time.Second)
	require.Equal(t, "completed", done["status"], done)
	children := d.tasksOf("tax-desk")
	require.Len(t, children, 1)
	child := d.task(children[0]["id"].(string))
	assert.Equal(t, "completed", child["status"], child)
	assert.Equal(t, pid, child["parent_task_id"])
	assert.Contains(t, child["result"], "Remote answer from "+srv.name+":")
	assert.Contains(t, child["result"], "(vat-delegated)")
	assert.Contains(t, done["result"], "Remote answer from "+srv.name, "the parent's answer used the remote one")
	posted, _ := d.pollResult(conv2, last, pid)
	assert.Contains(t, posted["content"], "Remote answer from "+srv.name)

	// Nothing of the team went out: no API key, only the agent's own
	// credential.
	for _, c := range srv.calls(t) {
		h := c["headers"].(map[string]any)
		assert.NotContains(t, h, "x-api-key")
		if c["method"] != nil && c["method"] != "" {
			assert.Equal(t, "Bearer "+srv.token, h["authorization"], c["method"])
		}
		raw, _ := json.Marshal(c)
		assert.NotContains(t, string(raw), d.key)
	}
}

// A remote agent that answers late is waited for in the delegation
// machine (a Wait state, the worker reading the remote task once per
// wake-up); one that hangs ends the task timed_out at its deadline, and
// the remote task is canceled.
func TestARemoteAgentsTaskWaitsInTheWorkflowAndTimesOut(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	srv := startA2ARemote(t)
	d.registerRemote(srv)

	st, slow := d.call("POST", "/v1/tasks", map[string]any{"assignee": "tax-desk", "title": "VAT return",
		"instructions": "[slow 3] prepare the VAT return (vat-slow)", "execute": true})
	require.Equal(t, 201, st, slow)
	done := d.waitTaskEnds(slow["id"].(string), 60*time.Second)
	require.Equal(t, "completed", done["status"], done)
	assert.Contains(t, done["result"], "Remote answer from "+srv.name+": VAT return")
	methods := map[string]int{}
	for _, c := range srv.calls(t) {
		if m, _ := c["method"].(string); m != "" {
			methods[m]++
		}
	}
	assert.GreaterOrEqual(t, methods["GetTask"], 1, "the workflow read the remote task: %v", methods)
	raw, _ := json.Marshal(done)
	assert.Contains(t, string(raw), "sent to the remote agent", "the timeline says where the task went")

	st, hung := d.call("POST", "/v1/tasks", map[string]any{"assignee": "tax-desk", "title": "Hang",
		"instructions": "[hang] never answer (vat-hang)", "execute": true, "budgets": map[string]any{"timeout_seconds": 6}})
	require.Equal(t, 201, st, hung)
	start := time.Now()
	ended := d.waitTaskEnds(hung["id"].(string), 60*time.Second)
	assert.Equal(t, "timed_out", ended["status"], ended)
	assert.Less(t, time.Since(start), 30*time.Second, "ended near its 6 s deadline")
	require.Eventually(t, func() bool {
		for _, c := range srv.calls(t) {
			if c["method"] == "CancelTask" {
				return true
			}
		}
		return false
	}, 15*time.Second, 300*time.Millisecond, "the remote task was canceled")
}

// Bad input changes nothing: skills or a model beside a2a, a card URL
// the local policy refuses or nothing answers, a credential on two lines.
func TestARemoteAgentsBadInputIsRefusedAndWritesNothing(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	srv := startA2ARemote(t)
	for name, c := range map[string]struct {
		a2a    map[string]any
		extra  map[string]any
		status int
	}{
		"skills beside a2a": {map[string]any{"card_url": srv.url}, map[string]any{"skills": []any{map[string]any{"name": "x-y", "description": "d"}}}, 400},
		"model beside a2a":  {map[string]any{"card_url": srv.url}, map[string]any{"model": map[string]any{"provider": "local"}}, 400},
		"no card url":       {map[string]any{"credential": "x"}, nil, 400},
		"not http":          {map[string]any{"card_url": "ftp://127.0.0.1/card"}, nil, 400},
		"not loopback":      {map[string]any{"card_url": "https://example.com/"}, nil, 422},
		"nothing answers":   {map[string]any{"card_url": "http://127.0.0.1:9/"}, nil, 502},
		"two-line secret":   {map[string]any{"card_url": srv.url, "credential": "a\nb"}, nil, 400},
	} {
		t.Run(name, func(t *testing.T) {
			body := map[string]any{"slug": "bad-remote", "name": "Bad", "a2a": c.a2a}
			for k, v := range c.extra {
				body[k] = v
			}
			st, res := d.call("POST", "/v1/agents", body)
			assert.Equal(t, c.status, st, res)
			assert.NotEmpty(t, res["error"], res)
			st, _ = d.call("GET", "/v1/agents/bad-remote", nil)
			assert.Equal(t, 404, st, "nothing written")
		})
	}
	assert.Empty(t, d.secretsUnder(e, manifest.A2ASecretsPrefix(e.names.Stage)+d.id+"/"), "no credential kept")
}

// An agent whose card cannot be fetched any more is unavailable: still a
// member, left out by the gate (the question goes to a colleague, no
// error), until a fetch works again. POST …/refresh fetches it now (the
// sweeper does it every hour, every five minutes while unavailable).
func TestAnUnreachableA2AAgentIsUnavailableToTheGate(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	other := mustDemoTeam(t, e)
	// The card through a proxy of the package's agent, closed once the
	// agent is registered: its card can no longer be fetched (a second
	// Python agent would cost its start, seconds of CPU).
	srv := startA2ARemote(t)
	target, err := url.Parse(srv.url)
	require.NoError(t, err)
	proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
	st, a := d.call("POST", "/v1/agents", map[string]any{"slug": "tax-desk", "name": "Tax Desk",
		"a2a": map[string]any{"card_url": proxy.URL, "credential": srv.token}})
	require.Equal(t, 201, st, a)
	proxy.Close()

	st, a = d.call("POST", "/v1/agents/tax-desk/refresh", nil)
	require.Equal(t, 200, st, a)
	r := a["a2a"].(map[string]any)
	assert.Equal(t, false, r["available"])
	assert.NotEmpty(t, r["last_error"])
	assert.Len(t, a["skills"], 2, "the last card's skills stay")

	conv := d.conversation("")
	turn := d.post(conv, map[string]any{"content": "How do I file my quarterly VAT return and reclaim the input tax on my invoices?"})
	assert.NotEqual(t, "tax-desk", lastReply(t, turn)["agent"], "the gate leaves an unavailable agent out")
	st, _ = d.call("GET", "/v1/agents/tax-desk", nil)
	assert.Equal(t, 200, st, "still a member")

	// Another team's refresh does not reach it; a colleague has no card.
	st, res := other.call("POST", "/v1/agents/tax-desk/refresh", nil)
	assert.Equal(t, 404, st, res)
	st, res = d.call("POST", "/v1/agents/kyra/refresh", nil)
	assert.Equal(t, 400, st, res)
}

// What registering and refreshing an external agent costs in AWS calls:
// one secret written and one transaction (the team must exist); a refresh
// reads the agent, the team (is_default) and the credential, and writes
// the agent once. The card itself is an HTTP call to the agent, not AWS.
func TestAWSCallBudgetsOfARemoteAgent(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	srv := startA2ARemote(t)
	api := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	runSteps(t, api, d.id, []step{
		{op: "POST /v1/agents (a2a)", method: "POST", path: func() string { return "/v1/agents" }, status: 201,
			body: map[string]any{"slug": "budget-desk", "name": "Desk", "a2a": map[string]any{"card_url": srv.url, "credential": srv.token}},
			max:  calls{"DynamoDB": 1, "SecretsManager": 1, "EventBridge": 1}},
		{op: "POST /v1/agents/{slug}/refresh", method: "POST", path: func() string { return "/v1/agents/budget-desk/refresh" }, status: 200,
			max: calls{"DynamoDB": 4, "DynamoDB.GetItem": 3, "DynamoDB.PutItem": 1, "SecretsManager": 1, "EventBridge": 1}},
	})
}

// A session stage of an external agent waits in the session's machine:
// the stage's state sends the message and asks for a wait, the Wait
// state (StageWaitsForRemote) runs nothing, and the state reads the
// remote task again until it answers; the next stage sees the answer
// fenced. A session cancelled while a stage waits cancels the remote
// task and ends the stage's task.
func TestARemoteAgentsSessionStageWaitsInTheSessionMachine(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	srv := startA2ARemote(t)
	d.registerRemote(srv)

	start := lastSeq(t)
	// The agent answers 6 s after the send: the machine's first waits (1
	// and 2 s) end before it however loaded this machine is, so a read
	// finds it unanswered (with 3 s, a slow first wait could miss it).
	id := d.start(map[string]any{"pattern": "pipeline", "goal": "[slow 6] Plan the VAT filing (vat-session)",
		"participants": []any{part("luke", "worker", 1), part("tax-desk", "worker", 2), part("archie", "worker", 3)}})
	s := d.waitSession(id, 90*time.Second)
	require.Equal(t, "completed", s["status"], s)
	var remote map[string]any
	for _, o := range s["stage_outputs"].([]any) {
		if o := o.(map[string]any); o["agent"] == "tax-desk" {
			remote = o
		}
	}
	require.NotNil(t, remote, s["stage_outputs"])
	assert.Equal(t, true, remote["remote"])
	assert.Contains(t, remote["output"], "Remote answer from "+srv.name+": Goal: [slow 6] Plan the VAT filing")
	assert.Nil(t, s["remote_waits"], "no stage waits once it answered")
	task := d.task(remote["task_id"].(string))
	assert.Equal(t, "completed", task["status"], task)
	sent := srv.callsWith(t, "(vat-session)")
	methods := map[string]int{}
	for _, c := range sent {
		methods[c["method"].(string)]++
	}
	assert.Equal(t, 1, methods["SendMessage"], "the stage's message went out once: %v", methods)
	_, states := history(t, e, s["execution_arn"].(string))
	assert.Contains(t, states, "StageWaitsForRemote", "the machine waited, not a Lambda")
	reads := 0
	for _, c := range srv.calls(t) {
		if c["method"] == "GetTask" {
			reads++
		}
	}
	assert.GreaterOrEqual(t, reads, 1, "the state read the remote task after a wait")
	// AWS calls of the stage's state: the send (the stage's task created
	// and started, the message, the wait recorded) and each read after a
	// wait (the session, the agent, its credential, the wait updated) are
	// far inside a local stage's budget, and no model is called.
	all, _ := invocations(t, start, "session-steps", d.id)
	remoteRuns, reads := 0, 0
	for _, inv := range all {
		if inv.SessionID != id || inv.Action != "stage" || inv.Calls["SecretsManager.GetSecretValue"] == 0 {
			continue // the local agents' stages
		}
		remoteRuns++
		// send: GetItem 8, PutItem 2, TransactWriteItems 2, UpdateItem 1;
		// the answer: GetItem 8, PutItem 2, Query 1, TransactWriteItems 3, UpdateItem 1
		// (the output stored with its SessionStageCompleted in one transaction).
		within(t, "remote stage", inv.Calls, calls{"DynamoDB": 15, "EventBridge": 3, "SecretsManager": 1})
		assert.Zero(t, inv.Calls["BedrockRuntime.Converse"], "no model runs for a remote stage")
		if byService(inv.Calls)["DynamoDB"] <= 4 && inv.Calls["EventBridge.PutEvents"] == 0 {
			reads++ // a read after a wait: the session, the agent, the wait updated
			within(t, "remote stage read", inv.Calls, calls{"DynamoDB": 4, "DynamoDB.GetItem": 3, "DynamoDB.PutItem": 1, "SecretsManager": 1})
		}
	}
	assert.GreaterOrEqual(t, remoteRuns, 3, "sent, read after a wait, answered")
	assert.GreaterOrEqual(t, reads, 1)
	next := d.tasksOf("archie")
	require.NotEmpty(t, next)
	assert.Contains(t, d.task(next[0]["id"].(string))["instructions"], `<remote_output source="a2a:tax-desk" trust="untrusted">`,
		"the next stage is shown the remote answer as untrusted data")

	// Cancelled while the remote agent works: the remote task is
	// canceled and the stage's task ends, giving tax-desk's slot back.
	id = d.start(map[string]any{"pattern": "brainstorm", "goal": "[hang] Ideas for the VAT filing (vat-cancel)",
		"participants": []any{part("tax-desk", "contributor", 0), part("luke", "contributor", 0)}})
	var waits []any
	require.Eventually(t, func() bool {
		_, cur := d.call("GET", "/v1/sessions/"+id, nil)
		waits, _ = cur["remote_waits"].([]any)
		return len(waits) == 1
	}, 30*time.Second, 250*time.Millisecond, "the stage waits for tax-desk")
	wait := waits[0].(map[string]any)
	taskID := wait["task_id"].(string)
	remoteID, _ := wait["remote_task_id"].(string)
	// The stage records its wait before it sends: the remote task's id
	// follows the send.
	require.Eventually(t, func() bool {
		_, cur := d.call("GET", "/v1/sessions/"+id, nil)
		ws, _ := cur["remote_waits"].([]any)
		if len(ws) == 1 {
			remoteID, _ = ws[0].(map[string]any)["remote_task_id"].(string)
		}
		return remoteID != ""
	}, 30*time.Second, 250*time.Millisecond)
	// This test's cancel, by the remote task's id (the package's agent
	// serves the other tests too).
	cancels := func() int {
		n := 0
		for _, call := range srv.calls(t) {
			if call["method"] == "CancelTask" && call["task_id"] == remoteID {
				n++
			}
		}
		return n
	}
	require.Zero(t, cancels())
	st, c := d.call("POST", "/v1/sessions/"+id+"/cancel", nil)
	require.Equal(t, 200, st, c)
	assert.Equal(t, "cancelled", c["status"])
	assert.Nil(t, c["remote_waits"])
	assert.Equal(t, 1, cancels(), "the remote task was canceled, once")
	ended := d.task(taskID)
	assert.Equal(t, "failed", ended["status"], ended)
}
