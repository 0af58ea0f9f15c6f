//go:build integration

// Faults end cleanly (issue 31): a dependency that stalls ends in the
// function's own answer — 503 `unavailable` with a reason, the service
// and the request id, before the function's deadline — never in a Lambda
// timeout and the gateway's bare 500. The stalls are injected by the edge
// for one API key and one function (localstack/cloud/faults.go), so these
// tests run beside the others on the shared local cloud.
package cloud_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/work/plans"
	"github.com/conclave-ai/conclave/shared/work/sessions"
)

// stall makes service hang for the invocations of function made with
// d's key, for seconds (0 clears it).
func (d demoTeam) stall(function, service string, seconds int) {
	d.t.Helper()
	d.fault(cloud.Fault{Function: function, Service: service, Seconds: seconds})
}

// fault injects f for d's key.
func (d demoTeam) fault(f cloud.Fault) {
	d.t.Helper()
	f.APIKey = d.key
	raw, _ := json.Marshal(f)
	resp, err := http.Post(os.Getenv("CONCLAVE_EDGE_URL")+cloud.FaultsPath, "application/json", bytes.NewReader(raw))
	require.NoError(d.t, err)
	resp.Body.Close()
	require.Equal(d.t, http.StatusNoContent, resp.StatusCode)
}

// inboxCount counts dana's inbox entries whose content contains marker
// (delivery is asynchronous: callers wait for it).
func (d demoTeam) inboxCount(marker string) int {
	n := 0
	for _, m := range d.inbox("dana") {
		if strings.Contains(m["content"].(string), marker) {
			n++
		}
	}
	return n
}

// requireDeliveredOnce waits for dana's inbox to hold the message marked
// marker (delivery is asynchronous: message-fanout), then a little longer
// for a second delivery, and requires exactly one.
func (d demoTeam) requireDeliveredOnce(marker string) {
	d.t.Helper()
	require.Eventually(d.t, func() bool { return d.inboxCount(marker) >= 1 }, 30*time.Second, 300*time.Millisecond)
	time.Sleep(2 * time.Second)
	assert.Equal(d.t, 1, d.inboxCount(marker), "delivered once")
}

// sendAgain sends a request again with its Idempotency-Key after a 503,
// as a client does. The first request's release of its claim can be lost
// (the table slow or stalled as the function answered, as on a loaded
// CI machine): the answer is then 409 RequestInProgress with Retry-After,
// followed here, at most twice. The claim lapses idempotency.ClaimGrace
// after the first invocation's deadline (the functions here run 6 or 10
// s), so two waits of Retry-After are enough; a claim held for
// idempotency.PendingTTL would fail this.
func sendAgain(t *testing.T, api apitest.Client, path string, body any, key string) apitest.Response {
	t.Helper()
	for try := 0; ; try++ {
		r := api.Do("POST", path, body, "Idempotency-Key", key)
		if r.Status != 409 || try == 2 {
			return r
		}
		_, _, reason := r.ErrorFields(t)
		require.Equal(t, "RequestInProgress", reason, string(r.Body))
		wait, err := strconv.Atoi(r.Header.Get("Retry-After"))
		require.NoError(t, err, "Retry-After in seconds")
		require.LessOrEqual(t, time.Duration(wait)*time.Second, idempotency.ClaimGrace+5*time.Second)
		time.Sleep(time.Duration(wait) * time.Second)
	}
}

// requireUnavailable checks a 503 in the product's error shape: the code,
// the reason, the service, a request id and Retry-After.
func requireUnavailable(t *testing.T, r apitest.Response, reason string) {
	t.Helper()
	require.Equal(t, 503, r.Status, string(r.Body))
	body := r.JSON(t)
	e, ok := body["error"].(map[string]any)
	require.True(t, ok, "the error shape, not the gateway's bare message: %s", r.Body)
	assert.Equal(t, "unavailable", e["code"])
	assert.Equal(t, reason, e["reason"])
	assert.Equal(t, "DynamoDB", e["details"].(map[string]any)["service"])
	assert.NotEmpty(t, body["request_id"])
	assert.Equal(t, "1", r.Header.Get("Retry-After"))
}

// DynamoDB stalls while the authorizer checks the key: the request is
// answered 503 DependencyUnavailable with its request id within the
// authorizer's 5 s, and works again once the table answers.
func TestAStalledKeyCheckAnswers503NotABare500(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	api := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	d.stall("authorizer", "DynamoDB", 60)
	start := time.Now()
	r := api.Do("GET", "/v1/agents", nil)
	took := time.Since(start)
	d.stall("authorizer", "DynamoDB", 0)
	requireUnavailable(t, r, "DependencyUnavailable")
	assert.Less(t, took, 5*time.Second, "within the authorizer's timeout")
	assert.Equal(t, 200, api.Do("GET", "/v1/agents", nil).Status)
}

// A read before the commit stalls: the agent message answers 503
// DependencyUnavailable before the messages function's 10 s and nothing
// is stored; sent again, it is stored once.
func TestAStalledReadBeforeACommitAnswers503AndStoresNothing(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	api := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	body := map[string]any{"to": "dana", "content": "stalled-read " + d.id}
	d.stall("messages", "DynamoDB", 60)
	start := time.Now()
	r := api.Do("POST", "/v1/agents/luke/messages", body)
	took := time.Since(start)
	d.stall("messages", "DynamoDB", 0)
	requireUnavailable(t, r, "DependencyUnavailable")
	assert.Less(t, took, 10*time.Second, "the function answered before its deadline")
	assert.Contains(t, r.JSON(t)["error"].(map[string]any)["message"], "nothing was changed")

	assert.Zero(t, d.inboxCount("stalled-read"), "nothing was stored")
	again := api.Do("POST", "/v1/agents/luke/messages", body, "Idempotency-Key", "stall-1")
	require.Equal(t, 201, again.Status, string(again.Body))
	replay := api.Do("POST", "/v1/agents/luke/messages", body, "Idempotency-Key", "stall-1")
	require.Equal(t, 201, replay.Status)
	assert.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"))
	d.requireDeliveredOnce("stalled-read")
}

// A create whose table stalls from its first call (the idempotency claim)
// cannot know whether its claim landed (nor release it): the answer is
// 503, the claim lapses idempotency.ClaimGrace after the function's
// deadline (RequestInProgress with Retry-After meanwhile), and the retry
// with the same key, following Retry-After, stores the message once; a
// replay answers the same.
func TestACreateRetriedAfterAnUnknownOutcomeIsStoredOnce(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	api := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	body := map[string]any{"to": "dana", "content": "unknown-outcome " + d.id}
	d.stall("messages", "DynamoDB", 60)
	r := api.Do("POST", "/v1/agents/luke/messages", body, "Idempotency-Key", "stall-2")
	d.stall("messages", "DynamoDB", 0)
	require.Equal(t, 503, r.Status, string(r.Body))
	assert.NotEmpty(t, r.JSON(t)["request_id"])

	again := sendAgain(t, api, "/v1/agents/luke/messages", body, "stall-2")
	require.Equal(t, 201, again.Status, string(again.Body))
	replay := api.Do("POST", "/v1/agents/luke/messages", body, "Idempotency-Key", "stall-2")
	require.Equal(t, 201, replay.Status)
	assert.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"))
	d.requireDeliveredOnce("unknown-outcome")
}

// Step Functions stalls while a session is created: the create answers
// 201 (the session is stored, planning, with no execution) instead of an
// error a client would retry into a second session, and the reconciler
// (the task-sweeper, once the session has been planning for StartGrace)
// starts its execution by the session's id; the session then completes.
// A plan whose start stalls in a chat turn is likewise started by the
// sweep, by the plan's id, and completes.
func TestAnOrphanedSessionIsStartedByTheReconciler(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	api := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	d.stall("sessions", "SFN", 60)
	r := api.Do("POST", "/v1/sessions", map[string]any{"pattern": "brainstorm", "lead": "kyra", "goal": "Name the release (orphan)",
		"participants": []any{part("luke", "contributor", 0), part("archie", "contributor", 0)}})
	d.stall("sessions", "SFN", 0)
	require.Equal(t, 201, r.Status, string(r.Body))
	s := r.JSON(t)
	id := s["id"].(string)
	assert.Equal(t, "planning", s["status"])
	assert.Nil(t, s["execution_arn"], "no execution started")

	// A plan whose StartExecution stalls: the turn still commits its
	// reply (the start is cut after plans.StartTimeout) and the sweep
	// starts the plan.
	conv := d.conversation("kyra")
	d.stall("conversations", "SFN", 60)
	turn := d.post(conv, map[string]any{"content": "Review the payment handler for bugs and security issues, then write release notes " + planMarker(threeStepPlan)})
	d.stall("conversations", "SFN", 0)
	planID := pendingPlan(t, turn)

	created, err := time.Parse(time.RFC3339Nano, s["created_at"].(string))
	require.NoError(t, err)
	time.Sleep(time.Until(created.Add(max(sessions.StartGrace, plans.StartGrace) + 6*time.Second)))
	_, err = invokeFunction(t, e, "task-sweeper", `{"source":"aws.events","detail-type":"Scheduled Event"}`)
	require.NoError(t, err)
	done := d.waitSession(id, 90*time.Second)
	assert.Equal(t, "completed", done["status"], done)
	assert.True(t, strings.HasSuffix(done["execution_arn"].(string), ":"+id), "the execution is named by the session: %v", done["execution_arn"])
	p := d.waitPlan(planID, 90*time.Second)
	assert.Equal(t, "completed", p["status"], p)
	assert.True(t, strings.HasSuffix(p["execution_arn"].(string), ":"+planID), "the execution is named by the plan: %v", p["execution_arn"])
}

// The message is stored, then EventBridge stalls before it is announced:
// the answer is 503 OutcomeUnknown; sent again with the same
// Idempotency-Key, the stored message is the answer (the same id,
// announced again) and dana's inbox has it once.
func TestAMessageStoredBeforeAStallIsNotSentTwice(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	api := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	body := map[string]any{"to": "dana", "content": "announce-stall " + d.id}
	d.stall("messages", "EventBridge", 60)
	r := api.Do("POST", "/v1/agents/luke/messages", body, "Idempotency-Key", "stall-3")
	d.stall("messages", "EventBridge", 0)
	require.Equal(t, 503, r.Status, string(r.Body))
	_, _, reason := r.ErrorFields(t)
	assert.Equal(t, "OutcomeUnknown", reason, "the message was written before the stall")

	again := sendAgain(t, api, "/v1/agents/luke/messages", body, "stall-3")
	require.Equal(t, 201, again.Status, string(again.Body))
	d.requireDeliveredOnce("announce-stall")
}

// A turn's commit applies and its answer is lost (the connection drops
// after TransactWriteItems was sent; the function runs with a 6 s timeout
// so the test need not wait 29 s): the turn answers 503 OutcomeUnknown
// before its deadline. Sent again with the same Idempotency-Key, the
// stored turn is the answer — the same user message, its reply — and the
// conversation holds it once.
func TestATurnWhoseCommitAnswerWasLostIsStoredOnce(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	api := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	conv := d.conversation("kyra")
	path := "/v1/conversations/" + conv + "/messages"
	body := map[string]any{"content": "What should we name the release?"}
	d.fault(cloud.Fault{Function: "conversations", Service: "DynamoDB", Operation: "TransactWriteItems", AnswerLost: true, Seconds: 60, Timeout: 6})
	start := time.Now()
	r := api.Do("POST", path, body, "Idempotency-Key", "lost-turn-1")
	took := time.Since(start)
	d.stall("conversations", "DynamoDB", 0)
	require.Equal(t, 503, r.Status, string(r.Body))
	_, _, reason := r.ErrorFields(t)
	assert.Equal(t, "OutcomeUnknown", reason)
	assert.Less(t, took, 6*time.Second, "answered before the function's deadline")
	stored := d.messages(conv)
	require.Len(t, stored, 2, "the turn applied: the message and its reply")

	again := sendAgain(t, api, path, body, "lost-turn-1")
	require.Equal(t, 201, again.Status, string(again.Body))
	turn := again.JSON(t)
	assert.Equal(t, stored[0]["id"], turn["user_message"].(map[string]any)["id"], "the stored turn is the answer")
	replies := turn["replies"].([]any)
	require.Len(t, replies, 1)
	assert.Equal(t, stored[1]["id"], replies[0].(map[string]any)["id"])
	assert.Equal(t, stored[1]["content"], replies[0].(map[string]any)["content"])
	assert.Equal(t, stored[0]["decision_id"], turn["routing"].(map[string]any)["id"], "with its routing decision")
	assert.Len(t, d.messages(conv), 2, "stored once")

	replay := api.Do("POST", path, body, "Idempotency-Key", "lost-turn-1")
	require.Equal(t, 201, replay.Status)
	assert.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"))
	assert.Equal(t, again.JSON(t), replay.JSON(t))
}

// A session's create applies and its answer is lost: 503 OutcomeUnknown
// before the deadline; the create sent again with the same
// Idempotency-Key answers that session (one session in the team's list),
// planning: its request ended before StartExecution, so the reconciler
// starts it as it does any orphan.
func TestASessionWhoseCreateAnswerWasLostIsCreatedOnce(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	api := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	body := map[string]any{"pattern": "brainstorm", "lead": "kyra", "goal": "Name the release (lost answer)",
		"participants": []any{part("luke", "contributor", 0), part("archie", "contributor", 0)}}
	d.fault(cloud.Fault{Function: "sessions", Service: "DynamoDB", Operation: "TransactWriteItems", AnswerLost: true, Seconds: 60, Timeout: 6})
	r := api.Do("POST", "/v1/sessions", body, "Idempotency-Key", "lost-session-1")
	d.stall("sessions", "DynamoDB", 0)
	require.Equal(t, 503, r.Status, string(r.Body))
	_, _, reason := r.ErrorFields(t)
	assert.Equal(t, "OutcomeUnknown", reason)

	again := sendAgain(t, api, "/v1/sessions", body, "lost-session-1")
	require.Equal(t, 201, again.Status, string(again.Body))
	s := again.JSON(t)
	list := api.Do("GET", "/v1/sessions", nil).JSON(t)["items"].([]any)
	require.Len(t, list, 1, "one session under the key")
	assert.Equal(t, list[0].(map[string]any)["id"], s["id"])

	assert.Equal(t, "planning", s["status"])
	assert.Nil(t, s["execution_arn"], "its request ended before StartExecution: the reconciler's (TestAnOrphanedSessionIsStartedByTheReconciler)")
}
