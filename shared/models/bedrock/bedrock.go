// Package bedrock is the models port's adapter for Amazon Bedrock: the
// Converse API, with tool use, and ConverseStream when the caller asks for
// the reply's text as it is written (models.Request.OnDelta). It is the
// only package of the module that links the Bedrock runtime client, so only
// functions that may call Bedrock carry it.
package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	brtypes "github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"

	"github.com/conclave-ai/conclave/shared/models"
)

// ConverseAPI is the part of the Bedrock runtime client the adapter uses:
// Converse, and ConverseStream for a request that asks for deltas.
type ConverseAPI interface {
	Converse(context.Context, *bedrockruntime.ConverseInput, ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseOutput, error)
	ConverseStream(context.Context, *bedrockruntime.ConverseStreamInput, ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseStreamOutput, error)
}

// Model answers through the Amazon Bedrock Converse API, with tool use.
type Model struct {
	// Client is the Bedrock runtime client, built once per cold start.
	Client ConverseAPI
	// DefaultModelID is used when a request names none.
	DefaultModelID string
}

var _ models.Model = Model{}

// Converse implements models.Model. Provider failures are models.ErrModel
// with the service's error code; a context's end is returned as it is.
// With req.OnDelta set it streams (ConverseStream, stream.go).
func (b Model) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	in := b.converseInput(req)
	if req.OnDelta != nil {
		return b.converseStream(ctx, in, req.OnDelta)
	}
	out, err := b.Client.Converse(ctx, in)
	if err != nil {
		return models.Response{}, bedrockError(err)
	}
	resp := models.Response{ModelID: aws.ToString(in.ModelId)}
	if out.Usage != nil {
		resp.InputTokens, resp.OutputTokens = int(aws.ToInt32(out.Usage.InputTokens)), int(aws.ToInt32(out.Usage.OutputTokens))
	}
	if msg, ok := out.Output.(*brtypes.ConverseOutputMemberMessage); ok {
		for _, block := range msg.Value.Content {
			switch c := block.(type) {
			case *brtypes.ContentBlockMemberText:
				resp.Text += c.Value
			case *brtypes.ContentBlockMemberToolUse:
				input := "{}"
				if c.Value.Input != nil {
					if raw, err := c.Value.Input.MarshalSmithyDocument(); err == nil {
						input = string(raw)
					}
				}
				resp.ToolCalls = append(resp.ToolCalls, models.ToolCall{ID: aws.ToString(c.Value.ToolUseId), Name: aws.ToString(c.Value.Name), Input: input})
			}
		}
	}
	resp.Refused = refused(out.StopReason)
	return resp, nil
}

// converseInput maps the request to a Converse input. ConverseStream takes
// the same members (streamInput), so both paths send one request.
func (b Model) converseInput(req models.Request) *bedrockruntime.ConverseInput {
	modelID := req.ModelID
	if modelID == "" {
		modelID = b.DefaultModelID
	}
	in := &bedrockruntime.ConverseInput{ModelId: aws.String(modelID), Messages: bedrockMessages(req.Messages)}
	if len(req.Metadata) > 0 {
		// Bedrock records it with the invocation log, so a call can be
		// traced to its team and agent; the model never sees it.
		in.RequestMetadata = req.Metadata
	}
	if req.System != "" {
		in.System = []brtypes.SystemContentBlock{&brtypes.SystemContentBlockMemberText{Value: req.System}}
	}
	if req.MaxTokens > 0 {
		in.InferenceConfig = &brtypes.InferenceConfiguration{MaxTokens: aws.Int32(int32(req.MaxTokens))}
	}
	if len(req.Tools) > 0 {
		tc := &brtypes.ToolConfiguration{}
		for _, t := range req.Tools {
			tc.Tools = append(tc.Tools, &brtypes.ToolMemberToolSpec{Value: brtypes.ToolSpecification{
				Name: aws.String(t.Name), Description: aws.String(t.Description),
				InputSchema: &brtypes.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(t.InputSchema())},
			}})
		}
		in.ToolConfig = tc
	}
	return in
}

// refused tells a provider's refusal (a guardrail, a content filter) from
// an answer.
func refused(stop brtypes.StopReason) bool {
	return stop == brtypes.StopReasonGuardrailIntervened || stop == brtypes.StopReasonContentFiltered
}

// leadIn opens a history whose first turn is the assistant's (a result or
// an agent's message posted before anyone wrote): Converse requires the
// first message to be the user's, and refused such a turn outright.
const leadIn = "(The conversation so far, beginning with the assistant's messages.)"

// bedrockMessages maps the conversation to Converse messages: tool calls
// become toolUse blocks, tool results toolResult blocks in a user turn,
// consecutive turns of one role are merged, and a history that begins
// with the assistant is led in by a user turn (Converse requires a user
// turn first, then alternation).
func bedrockMessages(msgs []models.Message) []brtypes.Message {
	out := mergedMessages(msgs)
	if len(out) > 0 && out[0].Role == brtypes.ConversationRoleAssistant {
		lead := brtypes.Message{Role: brtypes.ConversationRoleUser, Content: []brtypes.ContentBlock{&brtypes.ContentBlockMemberText{Value: leadIn}}}
		out = append([]brtypes.Message{lead}, out...)
	}
	return out
}

// mergedMessages maps msgs to Converse messages, one per run of a role.
func mergedMessages(msgs []models.Message) []brtypes.Message {
	var out []brtypes.Message
	for _, m := range msgs {
		role := brtypes.ConversationRoleUser
		var blocks []brtypes.ContentBlock
		switch m.Role {
		case "assistant":
			role = brtypes.ConversationRoleAssistant
			if m.Content != "" {
				blocks = append(blocks, &brtypes.ContentBlockMemberText{Value: m.Content})
			}
			for _, c := range m.ToolCalls {
				var input any = map[string]any{}
				_ = json.Unmarshal([]byte(c.Input), &input)
				blocks = append(blocks, &brtypes.ContentBlockMemberToolUse{Value: brtypes.ToolUseBlock{
					ToolUseId: aws.String(c.ID), Name: aws.String(c.Name), Input: document.NewLazyDocument(input)}})
			}
		case "tool":
			blocks = append(blocks, &brtypes.ContentBlockMemberToolResult{Value: brtypes.ToolResultBlock{
				ToolUseId: aws.String(m.ToolCallID),
				Content:   []brtypes.ToolResultContentBlock{&brtypes.ToolResultContentBlockMemberText{Value: m.Content}}}})
		default:
			blocks = append(blocks, &brtypes.ContentBlockMemberText{Value: m.Content})
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			continue
		}
		out = append(out, brtypes.Message{Role: role, Content: blocks})
	}
	return out
}

// bedrockError maps a provider failure to models.ErrModel, keeping the service's
// error code (ThrottlingException, ModelTimeoutException, …) in the message
// and context errors as they are.
func bedrockError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		return fmt.Errorf("%w: bedrock %s: %s", models.ErrModel, api.ErrorCode(), api.ErrorMessage())
	}
	return fmt.Errorf("%w: bedrock: %v", models.ErrModel, err)
}
