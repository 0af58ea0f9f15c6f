package localmodel_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/models/localmodel"
)

// request is a report request as shared/work/reports writes one (its own test
// checks the local model against the real thing).
func request(format string, max int) string {
	return "Report request: comparison\nTitle: Cache choice\nA comparison.\nFormat: " + format + "\n" +
		"Required sections (write every one, non-empty): options, recommendation\n" +
		"Optional sections (only those that apply): tradeoffs, risks\n" +
		"At most " + strconv.Itoa(max) + " sections in all.\n" +
		`Parameters: {"options":["Redis","Memcached"]}` + "\n" +
		`JSON schema: {"type":"object","properties":{"options":{"type":"array","minItems":2,"items":{"type":"string","minLength":1}},` +
		`"recommendation":{"type":"object","properties":{"choice":{"type":"string"},"level":{"type":"string","enum":["low","high"]},"score":{"type":"number","minimum":3}},"required":["choice"]},` +
		`"tradeoffs":{"type":"string"},"risks":{"type":"array","items":{"type":"string"}}}}` + "\n"
}

func reportModel(scripts ...string) localmodel.Model {
	d := directory{}
	for _, s := range scripts {
		d["t/luke-"+s] = luke(s)
	}
	return localmodel.New(d)
}

func TestTheLocalModelWritesTheReportItIsAskedFor(t *testing.T) {
	m := reportModel("")
	r, err := m.Converse(context.Background(), ask("", request("markdown", 3)))
	require.NoError(t, err)
	assert.Equal(t, "# Cache choice\n\n## options\n\nOptions for Cache choice, Redis, Memcached: the key points are scope, risks and next steps.\n\n"+
		"## recommendation\n\nRecommendation for Cache choice, Redis, Memcached: the key points are scope, risks and next steps.\n\n"+
		"## tradeoffs\n\nTradeoffs for Cache choice, Redis, Memcached: the key points are scope, risks and next steps.", r.Text,
		"the required sections, then optional ones up to the limit")

	r, err = m.Converse(context.Background(), ask("", request("bullet_points", 4)))
	require.NoError(t, err)
	assert.Contains(t, r.Text, "options:\n- Options for Cache choice")
	assert.Contains(t, r.Text, "\n\nrisks:\n- ")

	r, err = m.Converse(context.Background(), ask("", request("json", 4)))
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.Text), &obj), r.Text)
	assert.Len(t, obj["options"], 2, "minItems")
	rec := obj["recommendation"].(map[string]any)
	assert.Equal(t, "low", rec["level"], "the first of an enum")
	assert.EqualValues(t, 3, rec["score"], "the minimum")
	assert.IsType(t, "", obj["tradeoffs"])
}

func TestOmitScriptsLeaveSectionsOut(t *testing.T) {
	m := reportModel("omit-once:recommendation", "omit:recommendation")
	for script, revised := range map[string]bool{"omit-once:recommendation": true, "omit:recommendation": false} {
		req := ask(script, request("markdown", 2))
		r, err := m.Converse(context.Background(), req)
		require.NoError(t, err)
		assert.NotContains(t, r.Text, "## recommendation", script)
		assert.Contains(t, r.Text, "## options", script)

		req.Messages = append(req.Messages, models.Message{Role: "assistant", Content: r.Text},
			models.Message{Role: "user", Content: "Revision requested.\nSections to write: recommendation\n"})
		r, err = m.Converse(context.Background(), req)
		require.NoError(t, err)
		assert.Equal(t, revised, strings.Contains(r.Text, "## recommendation"), script)
		assert.NotContains(t, r.Text, "## options", "a revision writes only what it is asked for")
		if !revised {
			assert.Equal(t, "I have nothing to add to the sections I wrote.", r.Text)
		}
	}
}

func TestTheReportScriptRequestsAReportAndAnswersWithIt(t *testing.T) {
	m := reportModel("report:dana")
	req := ask("report:dana", "JWT rotation")
	req.Tools = []models.Tool{{Name: "request_report"}}
	r, err := m.Converse(context.Background(), req)
	require.NoError(t, err)
	require.Len(t, r.ToolCalls, 1)
	assert.Equal(t, "request_report", r.ToolCalls[0].Name)
	var in map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.ToolCalls[0].Input), &in))
	assert.Equal(t, map[string]any{"to_agent": "dana", "report_type": "research_summary", "title": "Research: JWT rotation",
		"parameters": map[string]any{"topic": "JWT rotation"}, "wait_for_result": true}, in)
	req.Messages = append(req.Messages, models.Message{Role: "assistant", ToolCalls: r.ToolCalls}, models.Message{Role: "tool", Content: "## findings\nrotate", ToolCallID: "call-1"})
	r, err = m.Converse(context.Background(), req)
	require.NoError(t, err)
	assert.Contains(t, r.Text, "Report: ## findings\nrotate")
}
