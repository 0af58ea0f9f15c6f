package bedrock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/platform/tracing"
	"github.com/conclave-ai/conclave/shared/platform/tracing/tracingtest"
)

// Each Titan call is an embeddings span (the GenAI conventions) under the
// caller's, with the model and the input tokens Titan counted.
func TestATitanCallIsAnEmbeddingsSpan(t *testing.T) {
	p, c := tracingtest.New(t, false)
	ctx, root := tracing.StartRoot(tracing.WithProvider(context.Background(), p), "expert-gate", trace.SpanKindServer, "", nil)
	_, err := titan(serveTitan(t), 1).Embed(ctx, []string{"is this function safe to merge?"})
	require.NoError(t, err)
	root.End()
	p.Flush(context.Background())
	s, ok := c.Spans()["embeddings "+settings.TitanEmbedModel]
	require.True(t, ok, c.Spans())
	assert.Equal(t, c.Spans()["expert-gate"].SpanID, s.ParentSpanID)
	attrs := map[string]string{}
	for _, a := range s.Attributes {
		switch {
		case a.Value.String != nil:
			attrs[a.Key] = *a.Value.String
		case a.Value.Int != nil:
			attrs[a.Key] = *a.Value.Int
		}
	}
	assert.Equal(t, "embeddings", attrs["gen_ai.operation.name"])
	assert.Equal(t, settings.TitanEmbedModel, attrs["gen_ai.request.model"])
	assert.NotEmpty(t, attrs["gen_ai.usage.input_tokens"])
}
