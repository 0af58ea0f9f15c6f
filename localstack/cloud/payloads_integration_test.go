//go:build integration

package cloud_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// payloads is the JSON payloads of a task answer, as raw JSON text.
type payloads struct {
	ID      string          `json:"id"`
	Status  string          `json:"status"`
	Result  string          `json:"result"`
	Error   string          `json:"error"`
	Version int             `json:"version"`
	Input   json.RawMessage `json:"input"`
	Output  json.RawMessage `json:"output"`
}

func payloadsOf(t *testing.T, r apitest.Response) payloads {
	t.Helper()
	var p payloads
	require.NoError(t, json.Unmarshal(r.Body, &p), string(r.Body))
	return p
}

// runningBoardTask is a board task of luke's with the given raw input
// (none when empty), started.
func runningBoardTask(t *testing.T, d demoTeam, input string) payloads {
	t.Helper()
	body := `{"assignee":"luke","title":"payload work"`
	if input != "" {
		body += `,"input":` + input
	}
	created := d.do("POST", "/v1/tasks", body+"}")
	require.Equal(t, 201, created.Status, string(created.Body))
	p := payloadsOf(t, created)
	started := d.do("POST", "/v1/tasks/"+p.ID+"/start", nil)
	require.Equal(t, 200, started.Status, string(started.Body))
	return p
}

// A JSON input and output round-trip through the API as written
// (unicode, escapes, numbers beyond float64), by GET and by the list.
func TestTaskPayloadsRoundTrip(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	input := `{"rows":[1,2.50,123456789012345678901234567890],"name":"Zoë \u00e9 😀","huge":1e400}`
	p := runningBoardTask(t, d, " "+input+" ")
	assert.Equal(t, input, string(p.Input), "the create answers the input as written, whitespace aside")

	output := `{"sum":123456789012345678901234567893.50,"notes":["ünï","\ud83d\ude00"],"nested":{"ok":true,"none":null}}`
	done := d.do("POST", "/v1/tasks/"+p.ID+"/complete", `{"result":"summed","output":`+output+`}`)
	require.Equal(t, 200, done.Status, string(done.Body))
	got := d.do("GET", "/v1/tasks/"+p.ID, nil)
	require.Equal(t, 200, got.Status, string(got.Body))
	g := payloadsOf(t, got)
	assert.Equal(t, "completed", g.Status)
	assert.Equal(t, "summed", g.Result, "result keeps its text")
	assert.Equal(t, input, string(g.Input))
	assert.Equal(t, output, string(g.Output))

	list := d.do("GET", "/v1/tasks?assignee=luke", nil)
	require.Equal(t, 200, list.Status)
	var l struct{ Items []payloads }
	require.NoError(t, json.Unmarshal(list.Body, &l))
	require.NotEmpty(t, l.Items)
	assert.Equal(t, output, string(l.Items[0].Output), "the list returns the payloads")

	// A string output is also the result (the route's text output before
	// payloads); /fail keeps its reason beside an output.
	s := runningBoardTask(t, d, "")
	done = d.do("POST", "/v1/tasks/"+s.ID+"/complete", map[string]any{"output": "15 pages"})
	require.Equal(t, 200, done.Status, string(done.Body))
	assert.Equal(t, "15 pages", payloadsOf(t, done).Result)
	assert.Equal(t, `"15 pages"`, string(payloadsOf(t, done).Output))
	f := runningBoardTask(t, d, "")
	failed := d.do("POST", "/v1/tasks/"+f.ID+"/fail", `{"reason":"the source is gone","output":["step 3",{"code":404}]}`)
	require.Equal(t, 200, failed.Status, string(failed.Body))
	assert.Equal(t, "the source is gone", payloadsOf(t, failed).Error)
	assert.Equal(t, `["step 3",{"code":404}]`, string(payloadsOf(t, failed).Output))

	// A task without payloads has neither key.
	var shape map[string]any
	require.NoError(t, json.Unmarshal(d.do("GET", "/v1/tasks/"+s.ID, nil).Body, &shape))
	assert.NotContains(t, shape, "input")
}

// An oversized or wrong-kind payload is 400 naming the field, with nothing
// written; exactly the maximum is accepted.
func TestTaskPayloadsRefusedWriteNothing(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	sized := func(n int) string { return `"` + strings.Repeat("x", n-2) + `"` }
	for name, input := range map[string]string{
		"number": `42`, "boolean": `true`, "null": `null`, "one byte past the maximum": sized(tasks.MaxPayloadBytes + 1),
	} {
		r := d.do("POST", "/v1/tasks", `{"assignee":"luke","title":"x","input":`+input+`}`)
		require.Equal(t, 400, r.Status, name+": "+string(r.Body))
		_, field, _ := r.ErrorFields(t)
		assert.Equal(t, "input", field, name)
	}
	st, list := d.call("GET", "/v1/tasks", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, list["items"], "nothing written")

	p := runningBoardTask(t, d, sized(tasks.MaxPayloadBytes))
	assert.Len(t, p.Input, tasks.MaxPayloadBytes, "exactly the maximum")
	for name, body := range map[string]string{
		"complete, number":        `{"output":7}`,
		"complete, too large":     `{"output":` + sized(tasks.MaxPayloadBytes+1) + `}`,
		"complete, long string":   `{"output":"` + strings.Repeat("x", 20001) + `"}`,
		"complete, null":          `{"output":null}`,
		"fail, boolean":           `{"reason":"r","output":false}`,
		"fail, too large":         `{"reason":"r","output":` + sized(tasks.MaxPayloadBytes+1) + `}`,
		"fail, reason still asks": `{"output":{}}`,
	} {
		verb, _, _ := strings.Cut(name, ",")
		r := d.do("POST", "/v1/tasks/"+p.ID+"/"+verb, body)
		require.Equal(t, 400, r.Status, name+": "+string(r.Body))
		_, field, _ := r.ErrorFields(t)
		want := "output"
		if name == "fail, reason still asks" {
			want = "reason"
		}
		assert.Equal(t, want, field, name)
	}
	g := payloadsOf(t, d.do("GET", "/v1/tasks/"+p.ID, nil))
	assert.Equal(t, "running", g.Status, "a refused end writes nothing")
	assert.Nil(t, g.Output)
}

// Another team's task is not found on complete or fail with an output,
// and stays as it was; a replayed complete answers the same.
func TestTaskPayloadsIsolationAndReplay(t *testing.T) {
	e := mustEnv(t)
	mine, theirs := mustDemoTeam(t, e), mustDemoTeam(t, e)
	p := runningBoardTask(t, mine, `{"a":1}`)
	for verb, body := range map[string]string{"complete": `{"output":{"taken":true}}`, "fail": `{"reason":"r","output":{"taken":true}}`} {
		r := theirs.do("POST", "/v1/tasks/"+p.ID+"/"+verb, body)
		assert.Equal(t, 404, r.Status, verb+": "+string(r.Body))
	}
	g := payloadsOf(t, mine.do("GET", "/v1/tasks/"+p.ID, nil))
	assert.Equal(t, "running", g.Status)
	assert.Nil(t, g.Output)

	body := `{"output":{"answer":[42,"ünï"]}}`
	first := mine.do("POST", "/v1/tasks/"+p.ID+"/complete", body, "Idempotency-Key", "complete-"+p.ID)
	require.Equal(t, 200, first.Status, string(first.Body))
	again := mine.do("POST", "/v1/tasks/"+p.ID+"/complete", body, "Idempotency-Key", "complete-"+p.ID)
	require.Equal(t, 200, again.Status, "the replay answers the first answer: %s", again.Body)
	assert.JSONEq(t, string(first.Body), string(again.Body))
	g = payloadsOf(t, mine.do("GET", "/v1/tasks/"+p.ID, nil))
	assert.Equal(t, payloadsOf(t, first).Version, g.Version, "completed once")
	assert.Equal(t, `{"answer":[42,"ünï"]}`, string(g.Output))
}
