package openai

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
)

// chunk is one server-sent piece of a streamed chat completion.
type chunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// readStream reads a streamed chat completion ("data: {chunk}" lines,
// then "data: [DONE]") into the Response the whole answer gives: the text
// (each piece handed to OnDelta as it comes), the tool calls assembled by
// index from their pieces, the finish reason, and the usage of the last
// chunk (include_usage), estimated from the texts when a compatible
// server sends none. A stream that ends before a finish reason is a
// model error: a cut answer must not pass as a whole one.
func readStream(r io.Reader, modelID string, req models.Request) (models.Response, error) {
	resp := models.Response{ModelID: modelID}
	var text strings.Builder
	type call struct{ id, name, args string }
	calls := map[int]*call{}
	finished, usage := false, false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue // comments, event names, blank lines
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			break
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return models.Response{}, fmt.Errorf("%w: openai: malformed stream chunk", models.ErrModel)
		}
		if c.Error != nil {
			return models.Response{}, fmt.Errorf("%w: openai: %s", models.ErrModel, c.Error.Message)
		}
		if c.Usage != nil {
			resp.InputTokens, resp.OutputTokens, usage = c.Usage.PromptTokens, c.Usage.CompletionTokens, true
		}
		for _, ch := range c.Choices {
			if d := ch.Delta.Content; d != nil && *d != "" {
				text.WriteString(*d)
				req.OnDelta(*d)
			}
			for _, tc := range ch.Delta.ToolCalls {
				k := calls[tc.Index]
				if k == nil {
					k = &call{}
					calls[tc.Index] = k
				}
				k.id += tc.ID
				k.name += tc.Function.Name
				k.args += tc.Function.Arguments
			}
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				finished = true
				resp.Refused = *ch.FinishReason == "content_filter"
			}
		}
	}
	if err := sc.Err(); err != nil {
		return models.Response{}, fmt.Errorf("%w: openai: reading the stream: %v", models.ErrModel, err)
	}
	if !finished {
		return models.Response{}, fmt.Errorf("%w: openai: the stream ended before the answer did", models.ErrModel)
	}
	resp.Text = text.String()
	idx := make([]int, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		k := calls[i]
		if k.args == "" {
			k.args = "{}"
		}
		resp.ToolCalls = append(resp.ToolCalls, models.ToolCall{ID: k.id, Name: k.name, Input: k.args})
	}
	if !usage {
		resp.OutputTokens = models.EstimateTokens(resp.Text)
		for _, m := range req.Messages {
			resp.InputTokens += models.EstimateTokens(m.Content)
		}
		resp.InputTokens += models.EstimateTokens(req.System)
	}
	return resp, nil
}
