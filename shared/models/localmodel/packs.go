package localmodel

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
)

// Markers of the tool packs (docs/tools.md), read in the last user
// message (a task's instructions, or a chat message) by any agent
// without a script:
//
//	[list-tools]           the answer ends with "Tools offered: a, b, c."
//	                       (the tools of the request, in order), so a test
//	                       sees what the model was given
//	[request-pack:NAME]    the first call asks request_tool_pack for pack
//	                       NAME (when offered); the answer then lists the
//	                       tools offered, as [list-tools]
//	[call:TOOL {json}]     a call of tool TOOL with that JSON object as its
//	                       arguments (after the pack's request, when the
//	                       message asks for one too), made when TOOL is
//	                       offered; the answer then quotes the tool's
//	                       output ("TOOL answered: …"), so a test sees
//	                       what an MCP pack's server returned
//
// and, for the bridging tool extract_structured_data (a request whose
// system prompt carries ExtractMarker and the schema after it): the
// answer is a value the schema accepts (as a json report's), or, when the
// text holds [extract:invalid], {"unexpected": true}.
const (
	ListTools      = "[list-tools]"
	ExtractInvalid = "[extract:invalid]"
	// ExtractMarker ends the system prompt's sentence that precedes the
	// JSON Schema (agenttools.ExtractSystem).
	ExtractMarker = "valid against this JSON Schema:\n"
)

var (
	requestPackRE = regexp.MustCompile(`\[request-pack:([a-z][a-z0-9-]{0,23})\]`)
	callRE        = regexp.MustCompile(`\[call:([A-Za-z0-9_-]{1,64}) (\{.*?\})\]`)
)

// packAnswer answers the pack markers' steps and extraction requests.
func packAnswer(req models.Request, resp models.Response) (models.Response, bool) {
	if i := strings.Index(req.System, ExtractMarker); i >= 0 {
		var schema map[string]any
		_ = json.Unmarshal([]byte(req.System[i+len(ExtractMarker):]), &schema)
		var v any = fake(schema, "value", clip(lastUser(req), 60))
		if strings.Contains(lastUser(req), ExtractInvalid) {
			v = map[string]any{"unexpected": true}
		}
		raw, _ := json.Marshal(v)
		resp.Text, resp.OutputTokens = string(raw), models.EstimateTokens(string(raw))+1
		return resp, true
	}
	last := lastUser(req)
	m := requestPackRE.FindStringSubmatch(last)
	if c := callRE.FindStringSubmatch(last); c != nil {
		return callAnswer(req, resp, m != nil, c[1], c[2])
	}
	if m == nil {
		return resp, false
	}
	if toolResults(req) == 0 && hasTool(req, "request_tool_pack") {
		input, _ := json.Marshal(map[string]any{"pack": m[1], "reason": "the task needs it"})
		resp.ToolCalls, resp.OutputTokens = []models.ToolCall{{ID: "call-1", Name: "request_tool_pack", Input: string(input)}}, 12
		return resp, true
	}
	resp.Text = fmt.Sprintf("Done with pack %s. %s", m[1], offered(req))
	resp.OutputTokens = models.EstimateTokens(resp.Text)
	return resp, true
}

// offered names the request's tools.
func offered(req models.Request) string {
	names := make([]string, 0, len(req.Tools))
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	return "Tools offered: " + strings.Join(names, ", ") + "."
}

// callAnswer is the [call:TOOL {json}] marker's step: the pack's request
// first when the message asks for one (requested), then the call, then
// the answer quoting the call's output.
func callAnswer(req models.Request, resp models.Response, requested bool, tool, args string) (models.Response, bool) {
	step := 0
	if requested {
		step = 1
	}
	done := toolResults(req)
	switch {
	case requested && done == 0 && hasTool(req, "request_tool_pack"):
		pack := requestPackRE.FindStringSubmatch(lastUser(req))[1]
		input, _ := json.Marshal(map[string]any{"pack": pack, "reason": "the task needs it"})
		resp.ToolCalls, resp.OutputTokens = []models.ToolCall{{ID: "call-1", Name: "request_tool_pack", Input: string(input)}}, 12
	case done == step && hasTool(req, tool):
		resp.ToolCalls, resp.OutputTokens = []models.ToolCall{{ID: fmt.Sprintf("call-%d", step+1), Name: tool, Input: args}}, 12
	case done > step:
		resp.Text = fmt.Sprintf("%s answered: %s", tool, lastTool(req))
		resp.OutputTokens = models.EstimateTokens(resp.Text)
	default:
		resp.Text = fmt.Sprintf("Tool %s was not offered. %s", tool, offered(req))
		resp.OutputTokens = models.EstimateTokens(resp.Text)
	}
	return resp, true
}
