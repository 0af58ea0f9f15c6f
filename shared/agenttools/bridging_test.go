package agenttools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/agenttools"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/models/localmodel"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/tools/catalog"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/wire/localmodelwiring"
	"github.com/conclave-ai/conclave/shared/work/worker"
)

// scriptedModel answers every request with text and reports tokens; it
// keeps the requests.
type scriptedModel struct {
	text     string
	in, out  int
	requests []models.Request
}

func (m *scriptedModel) Converse(_ context.Context, req models.Request) (models.Response, error) {
	m.requests = append(m.requests, req)
	return models.Response{Text: m.text, InputTokens: m.in, OutputTokens: m.out, ModelID: "anthropic.claude-3-5-haiku-20241022-v1:0"}, nil
}

func bridgingFixture(t *testing.T, m models.Model) *fixture {
	f := newFixture(t)
	f.tools.Model = m
	f.tools.Clipboard = &toolpacks.Clipboard{Store: f.store}
	return f
}

// Every tool of every pack, as GET /v1/tool-packs shows it, has the
// complete schema its model receives (the same check as the catalog's).
func TestEveryPackToolHasACompleteSchema(t *testing.T) {
	list, err := agenttools.Packs{}.List(context.Background(), team)
	require.NoError(t, err)
	require.Len(t, list.ToolPacks, len(toolpacks.Builtin))
	for _, p := range list.ToolPacks {
		require.NotEmpty(t, p.Tools, p.Name)
		for _, tool := range p.Tools {
			assert.NotEmpty(t, tool.Description, tool.Name)
			assert.NotEmpty(t, tool.Flag, tool.Name)
			raw, err := json.Marshal(tool.InputSchema)
			require.NoError(t, err)
			var s jsonschema.Schema
			require.NoError(t, json.Unmarshal(raw, &s), tool.Name)
			_, err = s.Resolve(nil)
			require.NoError(t, err, tool.Name)
			assert.Equal(t, "object", s.Type, tool.Name)
			checkObject(t, p.Name+"/"+tool.Name, &s)
		}
	}
	_, err = agenttools.Packs{}.Get(context.Background(), team, "capture")
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), err)
	b, err := agenttools.Packs{}.Get(context.Background(), team, "bridging")
	require.NoError(t, err)
	assert.Equal(t, "extract_structured_data", b.Tools[1].Name)
	assert.Contains(t, b.Tools[1].InputSchema["required"], "schema")
	assert.True(t, strings.HasSuffix(agenttools.ExtractSystem, localmodel.ExtractMarker), "the local model finds the schema")
}

// A pack's tools are given within the flags and the wired services: the
// memory pack gives the declared memory tools to an agent that did not
// declare them; the bridging pack needs a model and a clipboard; a flag
// that is off keeps its tools out, pack or not.
func TestPackSpecsKeepFlagsAndServices(t *testing.T) {
	f := newFixture(t)
	kyra := agents.Agent{Slug: "kyra"}
	assert.Equal(t, []string{"search_memories", "share_memory"}, names(f.tools.PackSpecs(context.Background(), "", kyra, []string{"memory"})))
	assert.Empty(t, f.tools.PackSpecs(context.Background(), "", kyra, []string{"bridging"}), "no model, no clipboard: no bridging tool")
	f.tools.Clipboard = &toolpacks.Clipboard{Store: f.store}
	assert.Equal(t, []string{"clipboard_store", "clipboard_get"}, names(f.tools.PackSpecs(context.Background(), "", kyra, []string{"bridging"})))
	f.tools.Model = &scriptedModel{}
	assert.Len(t, f.tools.PackSpecs(context.Background(), "", kyra, []string{"bridging"}), 5)
	f.tools.Flags.TaskDelegation = false
	assert.Empty(t, f.tools.PackSpecs(context.Background(), "", kyra, []string{"reporting"}), "reports need task_delegation")
	assert.NotContains(t, names(f.tools.Specs(kyra)), "summarize_text", "the agent's own tools are unchanged")
}

// request_tool_pack answers the worker with the pack to add (AddPack),
// naming the tools it adds (a chat reply's: chatpacks_test.go).
func TestRequestToolPackAsksTheWorker(t *testing.T) {
	f := bridgingFixture(t, &scriptedModel{})
	p := f.working(t, "kyra")
	_, err := f.tools.Call(context.Background(), p, models.ToolCall{ID: "c1", Name: "request_tool_pack", Input: `{"pack":"bridging"}`})
	var add worker.AddPack
	require.ErrorAs(t, err, &add)
	assert.Equal(t, "bridging", add.Pack)
	assert.Contains(t, add.Output, "summarize_text, extract_structured_data, compare_texts, clipboard_store, clipboard_get")

	out := f.call(t, p, "request_tool_pack", `{"pack":"Capture!"}`)
	assert.Contains(t, out, `"field":"pack"`, "a name no pack can have is an argument error")
	out = f.call(t, p, "request_tool_pack", `{"pack":"capture"}`)
	assert.Contains(t, out, "there is no tool pack capture", "a pack the team does not have is named as such")
	assert.Contains(t, names(f.tools.Specs(agents.Agent{Slug: "kyra"})), catalog.RequestToolPack, "every task may ask")
	assert.Contains(t, names(agenttools.Chat{Tools: f.tools}.Specs(agents.Agent{Slug: "kyra"})), catalog.RequestToolPack, "every chat reply may ask too")
}

// A bridging call charges the task's meter with the model's tokens and
// cost, clips the bridged text to what is left, and is refused before the
// call when too little is left.
func TestBridgingChargesTheTaskBudget(t *testing.T) {
	m := &scriptedModel{text: "a short summary", in: 300, out: 40}
	f := bridgingFixture(t, m)
	p := f.working(t, "kyra")
	meter := worker.NewMeter(4000)
	out, err := f.tools.Call(worker.WithMeter(context.Background(), meter), p,
		models.ToolCall{ID: "c1", Name: "summarize_text", Input: `{"text":"the parser drops the last token","max_words":50,"focus":"bugs"}`})
	require.NoError(t, err)
	assert.Equal(t, "a short summary", out)
	tokens, cost := meter.Charged()
	assert.Equal(t, 340, tokens)
	assert.Positive(t, cost)
	assert.Equal(t, 3660, meter.Left())
	require.Len(t, m.requests, 1)
	assert.Equal(t, 100, m.requests[0].MaxTokens, "the answer is bounded (2 tokens a word)")
	assert.Equal(t, "kyra", m.requests[0].Metadata[models.MetadataAgent], "attributed to the agent (the CostGuard's usage)")
	assert.Contains(t, m.requests[0].Messages[0].Content, "<text>\nthe parser drops the last token\n</text>")

	long := strings.Repeat("word ", 3000) // about 4,000 tokens
	meter = worker.NewMeter(1200)
	out, err = f.tools.Call(worker.WithMeter(context.Background(), meter), p,
		models.ToolCall{ID: "c2", Name: "compare_texts", Input: mustJSON(t, map[string]any{"text_a": long, "text_b": "short"})})
	require.NoError(t, err)
	assert.Contains(t, out, "clipped to fit the task's token budget")
	sent := m.requests[1]
	assert.LessOrEqual(t, models.EstimateTokens(sent.System)+models.EstimateTokens(sent.Messages[0].Content)+sent.MaxTokens, 1200, "input and answer fit what was left")
	assert.Contains(t, sent.Messages[0].Content, "<text_b>\nshort\n</text_b>")

	out, err = f.tools.Call(worker.WithMeter(context.Background(), worker.NewMeter(100)), p,
		models.ToolCall{ID: "c3", Name: "summarize_text", Input: `{"text":"x"}`})
	require.NoError(t, err)
	assert.Contains(t, out, "rejected (BudgetExceeded)")
	assert.Len(t, m.requests, 2, "no call made")
}

// extract_structured_data validates the model's answer against the
// caller's schema: valid data comes back as data, anything else as an
// error; a schema that is no JSON Schema is an argument error.
func TestExtractValidatesAgainstTheGivenSchema(t *testing.T) {
	m := &scriptedModel{in: 50, out: 20}
	f := bridgingFixture(t, m)
	p := f.working(t, "kyra")
	schema := map[string]any{"type": "object", "required": []string{"name", "severity"}, "additionalProperties": false,
		"properties": map[string]any{"name": map[string]any{"type": "string"}, "severity": map[string]any{"type": "string", "enum": []string{"low", "high"}}}}
	call := func(text string) map[string]any {
		t.Helper()
		m.text = text
		out := f.call(t, p, "extract_structured_data", map[string]any{"text": "CVE in the parser, severity high", "schema": schema})
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &got), out)
		return got
	}
	got := call(`{"name":"parser CVE","severity":"high"}`)
	assert.Equal(t, map[string]any{"name": "parser CVE", "severity": "high"}, got["data"])
	got = call("```json\n{\"name\":\"parser CVE\",\"severity\":\"low\"}\n```")
	assert.Equal(t, "low", got["data"].(map[string]any)["severity"], "a code fence is tolerated")
	got = call(`{"name":"parser CVE","severity":"critical"}`)
	assert.Equal(t, agenttools.ExtractFailed, got["error"])
	assert.Contains(t, got["message"], "severity")
	got = call(`{"name":"parser CVE"}`)
	assert.Equal(t, agenttools.ExtractFailed, got["error"])
	got = call(`the name is parser CVE`)
	assert.Contains(t, got["message"], "not JSON")
	assert.Contains(t, m.requests[0].System, `"enum":["low","high"]`, "the model is given the schema")

	out := f.call(t, p, "extract_structured_data", map[string]any{"text": "x", "schema": map[string]any{"type": 12}})
	assert.Contains(t, out, `"field":"schema"`)
	out = f.call(t, p, "extract_structured_data", map[string]any{"text": "x", "schema": map[string]any{}})
	assert.Contains(t, out, `"field":"schema"`, "an empty schema is refused by the tool's own schema")
	assert.Len(t, m.requests, 5, "no model call for a bad schema")

	// The local model answers with a value the schema accepts.
	f.tools.Model = localmodelwiring.New(f.store)
	out = f.call(t, p, "extract_structured_data", map[string]any{"text": "CVE in the parser", "schema": schema})
	assert.Contains(t, out, `"data":{`, out)
	out = f.call(t, p, "extract_structured_data", map[string]any{"text": "[extract:invalid] CVE", "schema": schema})
	assert.Contains(t, out, agenttools.ExtractFailed, out)
}

// The clipboard is the plan's in a task (its root task's: a step and its
// sub-task share it, another plan does not) and the conversation's in a
// chat.
func TestClipboardScopes(t *testing.T) {
	f := bridgingFixture(t, &scriptedModel{})
	ctx := context.Background()
	root := f.working(t, "kyra")
	root.RootTaskID = root.TaskID
	assert.Contains(t, f.call(t, root, "clipboard_store", `{"key":"findings","value":"two bugs"}`), `stored "findings"`)
	step := f.working(t, "luke")
	step.RootTaskID = root.TaskID
	assert.Contains(t, f.call(t, step, "clipboard_get", `{"key":"findings"}`), `"value":"two bugs"`)
	other := f.working(t, "luke")
	other.RootTaskID = other.TaskID
	assert.Contains(t, f.call(t, other, "clipboard_get", `{"key":"findings"}`), "rejected", "another plan's clipboard")
	assert.Contains(t, f.call(t, root, "clipboard_store", `{"key":"Bad Key","value":"x"}`), `"field":"key"`)
	assert.Contains(t, f.call(t, root, "clipboard_store", mustJSON(t, map[string]any{"key": "big", "value": strings.Repeat("x", toolpacks.MaxClipValue+1)})), `"field":"value"`)

	chat := agenttools.Chat{Tools: f.tools}
	kyra := agents.Agent{Slug: "kyra", Status: agents.StatusActive, Skills: []agents.Skill{{Name: "notes", Tools: []string{"clipboard_store", "clipboard_get"}}}}
	offered := chat.Specs(kyra)
	require.Contains(t, names(offered), "clipboard_store", "declared: given in a chat too")
	tc := conversations.ToolCaller{TeamID: team, ConversationID: "conv_1", Agent: "kyra", WaitUntil: time.Now().Add(time.Minute), Offered: offered}
	res, err := chat.Call(ctx, tc, models.ToolCall{ID: "c1", Name: "clipboard_store", Input: `{"key":"findings","value":"the chat's"}`})
	require.NoError(t, err)
	assert.Contains(t, res.Text, "stored")
	res, err = chat.Call(ctx, tc, models.ToolCall{ID: "c2", Name: "clipboard_get", Input: `{"key":"findings"}`})
	require.NoError(t, err)
	assert.Contains(t, res.Text, `"value":"the chat's"`)
	assert.Contains(t, f.call(t, root, "clipboard_get", `{"key":"findings"}`), `"value":"two bugs"`, "the conversation's clipboard is apart")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// delegate_task may give the colleague packs for that task only; an
// unknown pack is an argument error naming the field.
func TestDelegateTaskGivesPacks(t *testing.T) {
	f := newFixture(t)
	p := f.working(t, "kyra")
	out := f.call(t, p, "delegate_task", map[string]any{"to_agent": "luke", "instructions": "summarize it", "tool_packs": []string{"bridging"}, "wait_for_result": false})
	m := delegatedRE.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	child, err := f.tasks.Get(context.Background(), team, m[1])
	require.NoError(t, err)
	assert.Equal(t, []string{"bridging"}, child.ToolPacks)
	out = f.call(t, p, "delegate_task", map[string]any{"to_agent": "luke", "instructions": "x", "tool_packs": []string{"Capture!"}})
	assert.Contains(t, out, `"field":"tool_packs"`, out)
	out = f.call(t, p, "delegate_task", map[string]any{"to_agent": "luke", "instructions": "x", "tool_packs": []string{"capture"}})
	assert.Contains(t, out, `unknown tool pack "capture"`, "a pack the team does not have: refused by the task service")
}
