package tasks_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// sized is a JSON string of exactly n bytes.
func sized(n int) json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`)
}

func TestPayloadKindsAndSize(t *testing.T) {
	for _, c := range []struct {
		name, raw, want string // want "" is refused
	}{
		{"object", `{"a": 1, "b": [true, null]}`, `{"a":1,"b":[true,null]}`},
		{"array", ` [1, "two"] `, `[1,"two"]`},
		{"string", `"hello"`, `"hello"`},
		{"empty object", `{}`, `{}`},
		{"large numbers and unicode kept as written", `{"n": 123456789012345678901234567890.10, "e": 1e400, "u": "\u00e9 é 😀"}`,
			`{"n":123456789012345678901234567890.10,"e":1e400,"u":"\u00e9 é 😀"}`},
		{"number", `42`, ""},
		{"boolean", `true`, ""},
		{"null", `null`, ""},
		{"invalid JSON", `{"a":`, ""},
		{"two values", `{} {}`, ""},
		{"blank", `  `, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := tasks.Payload("input", json.RawMessage(c.raw))
			if c.want == "" {
				require.Error(t, err)
				ae, ok := apperr.As(err)
				require.True(t, ok)
				assert.Equal(t, apperr.EINVALID, ae.Code)
				assert.Equal(t, "input", ae.Field)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, string(got))
		})
	}
	got, err := tasks.Payload("output", nil)
	require.NoError(t, err)
	assert.Nil(t, got, "absent stays absent")

	got, err = tasks.Payload("output", sized(tasks.MaxPayloadBytes))
	require.NoError(t, err, "exactly the maximum")
	assert.Len(t, got, tasks.MaxPayloadBytes)
	_, err = tasks.Payload("output", sized(tasks.MaxPayloadBytes+1))
	assert.Equal(t, "output", fieldOf(t, err), "one byte past it")
	// The size is the compact JSON's: whitespace does not count.
	_, err = tasks.Payload("input", json.RawMessage("  "+string(sized(tasks.MaxPayloadBytes))+"\n"))
	assert.NoError(t, err)
}

func fieldOf(t *testing.T, err error) string {
	t.Helper()
	ae, ok := apperr.As(err)
	require.True(t, ok, "want an application error, got %v", err)
	assert.Equal(t, apperr.EINVALID, ae.Code)
	return ae.Field
}

func TestTaskPayloadsRoundTrip(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	in := json.RawMessage(`{"rows": [1, 2.50, 99999999999999999999], "name": "Zoë 😀"}`)
	tk, err := f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", Title: "Sum the rows", Input: in}, false)
	require.NoError(t, err)
	assert.Equal(t, `{"rows":[1,2.50,99999999999999999999],"name":"Zoë 😀"}`, string(tk.Input))
	assert.Equal(t, "Sum the rows", tk.Instructions, "the text fields keep their text")

	_, err = f.svc.Start(ctx, team, tk.ID, "u")
	require.NoError(t, err)
	done, err := f.svc.CompleteWith(ctx, team, tk.ID, "u", tasks.CompleteInput{Result: "summed", Output: json.RawMessage(`{"sum": 100000000000000000002.5}`)})
	require.NoError(t, err)
	got, err := f.svc.Get(ctx, team, tk.ID)
	require.NoError(t, err)
	assert.Equal(t, `{"sum":100000000000000000002.5}`, string(got.Output))
	assert.Equal(t, "summed", got.Result)
	assert.Equal(t, string(tk.Input), string(got.Input))
	assert.Equal(t, tasks.Completed, done.Status)
	assert.EqualValues(t, 31, got.Events[len(got.Events)-1].Payload["output_bytes"], "the timeline has the size, not the payload")

	list, _, err := f.svc.List(ctx, team, tasks.Filter{Assignee: "luke"}, paging.Page{Limit: 10})
	require.NoError(t, err)
	require.NotEmpty(t, list)
	assert.Equal(t, string(got.Output), string(list[0].Output), "lists return the payloads")
}

func TestCompleteWithAStringOutputKeepsTheResult(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	start := func() string {
		tk, err := f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", Title: "x"}, false)
		require.NoError(t, err)
		_, err = f.svc.Start(ctx, team, tk.ID, "u")
		require.NoError(t, err)
		return tk.ID
	}
	// A string output is the result too, as the route's string output was
	// before payloads.
	done, err := f.svc.CompleteWith(ctx, team, start(), "u", tasks.CompleteInput{Output: json.RawMessage(`"15 pages"`)})
	require.NoError(t, err)
	assert.Equal(t, "15 pages", done.Result)
	assert.Equal(t, `"15 pages"`, string(done.Output))
	done, err = f.svc.CompleteWith(ctx, team, start(), "u", tasks.CompleteInput{Result: "text", Output: json.RawMessage(`"payload"`)})
	require.NoError(t, err)
	assert.Equal(t, "text", done.Result, "a result given wins")

	id := start()
	long, _ := json.Marshal(strings.Repeat("é", 20001))
	_, err = f.svc.CompleteWith(ctx, team, id, "u", tasks.CompleteInput{Output: long})
	assert.Equal(t, "output", fieldOf(t, err))
	_, err = f.svc.CompleteWith(ctx, team, id, "u", tasks.CompleteInput{Result: strings.Repeat("é", 20001)})
	assert.Equal(t, "result", fieldOf(t, err))
	got, err := f.svc.Get(ctx, team, id)
	require.NoError(t, err)
	assert.Equal(t, tasks.Running, got.Status, "a refused complete writes nothing")
}

func TestRefusedPayloadsWriteNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for name, raw := range map[string]json.RawMessage{
		"number": json.RawMessage(`7`), "boolean": json.RawMessage(`false`), "null": json.RawMessage(`null`),
		"too large": sized(tasks.MaxPayloadBytes + 1), "invalid": json.RawMessage(`[1,`),
	} {
		_, err := f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", Title: "x", Input: raw}, false)
		assert.Equal(t, "input", fieldOf(t, err), name)
	}
	list, _, err := f.svc.List(ctx, team, tasks.Filter{Assignee: "luke"}, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, list, "nothing written")

	tk, err := f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", Title: "x", Input: sized(tasks.MaxPayloadBytes)}, false)
	require.NoError(t, err, "exactly the maximum")
	_, err = f.svc.Start(ctx, team, tk.ID, "u")
	require.NoError(t, err)
	_, err = f.svc.FailWith(ctx, team, tk.ID, "u", "broken", json.RawMessage(`12`))
	assert.Equal(t, "output", fieldOf(t, err))
	_, err = f.svc.FailWith(ctx, team, tk.ID, "u", " ", json.RawMessage(`{}`))
	assert.Equal(t, "reason", fieldOf(t, err))
	failed, err := f.svc.FailWith(ctx, team, tk.ID, "u", "broken", json.RawMessage(`{"step": 3, "log": ["a", "b"]}`))
	require.NoError(t, err)
	assert.Equal(t, "broken", failed.Error, "fail keeps its reason")
	assert.Equal(t, `{"step":3,"log":["a","b"]}`, string(failed.Output))
}
