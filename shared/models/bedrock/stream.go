package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	brtypes "github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/conclave-ai/conclave/shared/models"
)

// converseStream answers in through ConverseStream, passing each piece of
// text to onDelta as it arrives. The response is the one Converse would
// give for the same answer: the text whole, the tool calls with their
// input as Converse renders it, the tokens of the metadata event, Refused
// on a guardrail or content filter.
func (b Model) converseStream(ctx context.Context, in *bedrockruntime.ConverseInput, onDelta func(string)) (models.Response, error) {
	out, err := b.Client.ConverseStream(ctx, streamInput(in))
	if err != nil {
		return models.Response{}, bedrockError(err)
	}
	stream := out.GetStream()
	defer stream.Close()
	acc := accumulator{resp: models.Response{ModelID: aws.ToString(in.ModelId)}, onDelta: onDelta, tools: map[int32]*toolBlock{}}
	for ev := range stream.Events() {
		acc.add(ev)
	}
	if err := stream.Err(); err != nil {
		if ctx.Err() != nil {
			// The read failed because the caller gave up: report that, as
			// Converse does, so a timeout is told from a provider failure.
			return models.Response{}, ctx.Err()
		}
		return models.Response{}, bedrockError(err)
	}
	if !acc.stopped {
		// A stream cut between two events ends as cleanly as a whole one;
		// without messageStop the answer may be missing its end.
		if ctx.Err() != nil {
			return models.Response{}, ctx.Err()
		}
		return models.Response{}, fmt.Errorf("%w: bedrock: the stream ended before messageStop", models.ErrModel)
	}
	return acc.response(), nil
}

// streamInput is in as a ConverseStream input: the same request.
func streamInput(in *bedrockruntime.ConverseInput) *bedrockruntime.ConverseStreamInput {
	return &bedrockruntime.ConverseStreamInput{
		ModelId: in.ModelId, Messages: in.Messages, System: in.System, InferenceConfig: in.InferenceConfig,
		ToolConfig: in.ToolConfig, RequestMetadata: in.RequestMetadata,
	}
}

// accumulator builds the response from a stream's events.
type accumulator struct {
	resp    models.Response
	onDelta func(string)
	text    strings.Builder
	// tools are the toolUse blocks by content block index, in the order
	// they started (order).
	tools   map[int32]*toolBlock
	order   []int32
	stopped bool
}

type toolBlock struct {
	id, name string
	input    strings.Builder
}

func (a *accumulator) add(ev brtypes.ConverseStreamOutput) {
	switch e := ev.(type) {
	case *brtypes.ConverseStreamOutputMemberContentBlockStart:
		if start, ok := e.Value.Start.(*brtypes.ContentBlockStartMemberToolUse); ok {
			a.tool(e.Value.ContentBlockIndex, aws.ToString(start.Value.ToolUseId), aws.ToString(start.Value.Name))
		}
	case *brtypes.ConverseStreamOutputMemberContentBlockDelta:
		switch d := e.Value.Delta.(type) {
		case *brtypes.ContentBlockDeltaMemberText:
			if d.Value != "" {
				a.text.WriteString(d.Value)
				a.onDelta(d.Value)
			}
		case *brtypes.ContentBlockDeltaMemberToolUse:
			a.tool(e.Value.ContentBlockIndex, "", "").input.WriteString(aws.ToString(d.Value.Input))
		}
	case *brtypes.ConverseStreamOutputMemberMessageStop:
		a.stopped = true
		a.resp.Refused = refused(e.Value.StopReason)
	case *brtypes.ConverseStreamOutputMemberMetadata:
		if u := e.Value.Usage; u != nil {
			a.resp.InputTokens, a.resp.OutputTokens = int(aws.ToInt32(u.InputTokens)), int(aws.ToInt32(u.OutputTokens))
		}
	}
}

// tool is the toolUse block at index, started with id and name if new.
func (a *accumulator) tool(index *int32, id, name string) *toolBlock {
	i := aws.ToInt32(index)
	t, ok := a.tools[i]
	if !ok {
		t = &toolBlock{}
		a.tools[i] = t
		a.order = append(a.order, i)
	}
	if id != "" {
		t.id, t.name = id, name
	}
	return t
}

func (a *accumulator) response() models.Response {
	resp := a.resp
	resp.Text = a.text.String()
	for _, i := range a.order {
		t := a.tools[i]
		resp.ToolCalls = append(resp.ToolCalls, models.ToolCall{ID: t.id, Name: t.name, Input: toolInput(t.input.String())})
	}
	return resp
}

// toolInput renders a toolUse input streamed as JSON text the way Converse
// renders the input document (compact, keys sorted, numbers as written),
// so both paths give one tool call; "{}" when the tool took no input.
func toolInput(raw string) string {
	if strings.TrimSpace(raw) == "" {
		return "{}"
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		// Not JSON: the tool's caller reports it, as it would a model's
		// malformed arguments.
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return string(out)
}
