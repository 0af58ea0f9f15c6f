package models

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclave-ai/conclave/shared/platform/tracing"
)

// Traced makes every call of Model a "chat" span with OpenTelemetry's
// GenAI conventions: gen_ai.operation.name chat, gen_ai.provider.name
// (Provider: aws.bedrock, openai, …), the model asked and the one that
// answered, the tokens the provider counted (the numbers the CostGuard
// charges), the finish reason and the call's cost in USD
// (conclave.cost_usd, from the price table). The prompt and the reply are
// span events only when the stage records content (tracing.Content).
type Traced struct {
	Model Model
	// Provider is gen_ai.provider.name.
	Provider string
	// DefaultModelID is the model a request naming none gets.
	DefaultModelID string
}

// Converse implements Model.
func (t Traced) Converse(ctx context.Context, req Request) (Response, error) {
	model := req.ModelID
	if model == "" {
		model = t.DefaultModelID
	}
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", t.Provider),
		attribute.String("gen_ai.request.model", model),
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, attribute.Int("gen_ai.request.max_tokens", req.MaxTokens))
	}
	if a := req.Metadata[MetadataAgent]; a != "" {
		attrs = append(attrs, attribute.String("gen_ai.agent.name", a))
	}
	if c := req.Metadata[MetadataConversationID]; c != "" {
		attrs = append(attrs, attribute.String("gen_ai.conversation.id", c))
	}
	ctx, span := tracing.Start(ctx, strings.TrimSpace("chat "+model), trace.SpanKindClient, attrs...)
	if tracing.Content(ctx) {
		span.AddEvent("gen_ai.client.inference.operation.details", trace.WithAttributes(
			attribute.String("gen_ai.system_instructions", req.System), attribute.String("gen_ai.input.messages", transcript(req.Messages))))
	}
	resp, err := t.Model.Converse(ctx, req)
	if err == nil {
		answered := resp.ModelID
		if answered == "" {
			answered = model
		}
		span.SetAttributes(attribute.String("gen_ai.response.model", answered),
			attribute.Int("gen_ai.usage.input_tokens", resp.InputTokens), attribute.Int("gen_ai.usage.output_tokens", resp.OutputTokens),
			attribute.StringSlice("gen_ai.response.finish_reasons", []string{finishReason(resp)}),
			attribute.Float64("conclave.cost_usd", Cost(answered, resp.InputTokens, resp.OutputTokens)))
		if tracing.Content(ctx) {
			span.AddEvent("gen_ai.choice", trace.WithAttributes(attribute.String("gen_ai.output.messages", resp.Text)))
		}
	}
	tracing.End(ctx, span, err)
	return resp, err
}

// finishReason is the GenAI convention's name for why the reply ended,
// as far as a Response says: the provider refused, asked for tools, or
// stopped.
func finishReason(r Response) string {
	switch {
	case r.Refused:
		return "content_filter"
	case len(r.ToolCalls) > 0:
		return "tool_call"
	}
	return "stop"
}

// transcript is the messages as "role: content" lines.
func transcript(msgs []Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Role)
		b.WriteString(": ")
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	return b.String()
}
