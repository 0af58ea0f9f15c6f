//go:build integration

// A2A push notifications (issue 28, item 1): a client names a URL on a
// task the team's agent created; every status change of the task is
// POSTed there by the a2a-push function (bus → rule → SQS), with the
// config's token, as the task A2A shows. The configs are the team's
// alone; a bad one creates nothing.
package cloud_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pushReceiver is a client's push endpoint on loopback: what it received.
type pushReceiver struct {
	mu   sync.Mutex
	got  []map[string]any
	hdrs []http.Header
	srv  *httptest.Server
}

func newPushReceiver(t *testing.T) *pushReceiver {
	r := &pushReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		m := map[string]any{}
		_ = json.Unmarshal(body, &m)
		r.mu.Lock()
		r.got, r.hdrs = append(r.got, m), append(r.hdrs, req.Header.Clone())
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// states are the task states received for task id, in order, with the
// token each came with.
func (r *pushReceiver) states(id string) (states, tokens []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, m := range r.got {
		task, _ := m["task"].(map[string]any)
		if task == nil || task["id"] != id {
			continue
		}
		states = append(states, task["status"].(map[string]any)["state"].(string))
		tokens = append(tokens, r.hdrs[i].Get("A2A-Notification-Token"))
	}
	return states, tokens
}

func TestA2APushNotificationsReachTheClient(t *testing.T) {
	e := mustEnv(t)
	d, url := a2aTeam(t, e)
	other := mustDemoTeam(t, e)
	recv := newPushReceiver(t)
	v1 := []string{"A2A-Version", "1.0"}
	since := lastSeq(t)

	// The card says so.
	resp, err := http.Get(url + "/.well-known/agent-card.json")
	require.NoError(t, err)
	var card map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&card))
	resp.Body.Close()
	assert.Equal(t, true, card["capabilities"].(map[string]any)["pushNotifications"])

	// A message with a push config: the task's changes reach the URL.
	st, out := rpc(t, url, d.key, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"@kyra summarize the release notes"}]},
		"configuration":{"returnImmediately":true,"taskPushNotificationConfig":{"url":"`+recv.srv.URL+`/hook","token":"tok-push-1"}}}}`, v1...)
	require.Equal(t, 200, st, out)
	id := out["result"].(map[string]any)["task"].(map[string]any)["id"].(string)
	require.Eventually(t, func() bool {
		states, _ := recv.states(id)
		return len(states) >= 2 && slices.Contains(states, "TASK_STATE_COMPLETED")
	}, 60*time.Second, 200*time.Millisecond, "the running and the completed task were pushed")
	states, tokens := recv.states(id)
	for _, tok := range tokens {
		assert.Equal(t, "tok-push-1", tok, "the config's token on every notification")
	}
	// One notification per change (running, completed), each the task
	// as it is when sent: a late one may repeat the last state, and the
	// queue delivers at least once.
	assert.GreaterOrEqual(t, len(states), 2, "each change is sent: %v", states)

	// What a notification costs: its configs (one query) and the task
	// (one read), per event (a batch may carry several).
	var pushes []invocation
	require.Eventually(t, func() bool {
		pushes, _ = invocations(t, since, "a2a-push", "")
		return len(pushes) > 0
	}, 10*time.Second, 100*time.Millisecond, "the a2a-push invocations are logged")
	for _, inv := range pushes {
		if inv.Records > 0 {
			within(t, "a2a-push", inv.Calls, calls{"DynamoDB": 2 * inv.Records, "DynamoDB.Query": inv.Records, "DynamoDB.GetItem": inv.Records})
		}
	}

	// The configs by method; another team's agent does not see them.
	st, out = rpc(t, url, d.key, `{"jsonrpc":"2.0","id":2,"method":"ListTaskPushNotificationConfigs","params":{"taskId":"`+id+`"}}`, v1...)
	require.Equal(t, 200, st, out)
	configs := out["result"].(map[string]any)["configs"].([]any)
	require.Len(t, configs, 1)
	cfgID := configs[0].(map[string]any)["id"].(string)
	_, otherTeam := other.call("GET", "/v1/team", nil)
	otherURL := otherTeam["a2a"].(map[string]any)["url"].(string)
	st, out = rpc(t, otherURL, other.key, `{"jsonrpc":"2.0","id":3,"method":"GetTaskPushNotificationConfig","params":{"taskId":"`+id+`","id":"`+cfgID+`"}}`, v1...)
	require.Equal(t, 200, st, out)
	assert.Equal(t, float64(-32001), out["error"].(map[string]any)["code"], "another team's task is not found")
	st, out = rpc(t, url, d.key, `{"jsonrpc":"2.0","id":4,"method":"DeleteTaskPushNotificationConfig","params":{"taskId":"`+id+`","id":"`+cfgID+`"}}`, v1...)
	require.Equal(t, 200, st, out)
	assert.NotContains(t, out, "error")

	// A config the network policy refuses (locally: loopback only) is a
	// JSON-RPC error, and creates no task.
	_, before := d.call("GET", "/v1/tasks?limit=100", nil)
	st, out = rpc(t, url, d.key, `{"jsonrpc":"2.0","id":5,"method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"@kyra again"}]},
		"configuration":{"taskPushNotificationConfig":{"url":"https://hooks.example.com/x"}}}}`, v1...)
	assert.Less(t, st, 500, out)
	assert.Equal(t, float64(-32602), out["error"].(map[string]any)["code"], out)
	_, after := d.call("GET", "/v1/tasks?limit=100", nil)
	assert.Equal(t, len(before["items"].([]any)), len(after["items"].([]any)), "no task")
	assert.False(t, strings.Contains(recv.srv.URL, "example"))
}
