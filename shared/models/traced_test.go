package models_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/tracing"
	"github.com/conclave-ai/conclave/shared/platform/tracing/otlp"
)

type answering struct{}

func (answering) Converse(context.Context, models.Request) (models.Response, error) {
	return models.Response{Text: "the secret plan", InputTokens: 120, OutputTokens: 30, ModelID: "anthropic.claude-3-haiku-20240307-v1:0"}, nil
}

// chatSpan makes one traced call with the stage's content switch and
// returns the chat span as exported.
func chatSpan(t *testing.T, content bool) otlp.Span {
	var mu sync.Mutex
	var got []otlp.Span
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var ex otlp.Export
		require.NoError(t, json.Unmarshal(raw, &ex))
		mu.Lock()
		for _, rs := range ex.ResourceSpans {
			got = append(got, rs.ScopeSpans[0].Spans...)
		}
		mu.Unlock()
	}))
	defer srv.Close()
	p := otlp.NewProvider(tracing.Config{Service: "conversations", SamplePercent: 100, Content: content}, otlp.New(srv.URL, "conversations", aws.Config{}))
	ctx, root := tracing.StartRoot(tracing.WithProvider(context.Background(), p), "turn", trace.SpanKindServer, "", nil)
	m := models.Traced{Model: answering{}, Provider: "aws.bedrock", DefaultModelID: "amazon.nova-micro-v1:0"}
	_, err := m.Converse(ctx, models.Request{System: "you are wren", Messages: []models.Message{{Role: "user", Content: "my private question"}},
		Metadata: map[string]string{models.MetadataAgent: "wren"}})
	require.NoError(t, err)
	root.End()
	p.Flush(context.Background())
	for _, s := range got {
		if strings.HasPrefix(s.Name, "chat ") {
			return s
		}
	}
	t.Fatalf("no chat span in %v", got)
	return otlp.Span{}
}

func attr(s otlp.Span, key string) (otlp.Value, bool) {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value, true
		}
	}
	return otlp.Value{}, false
}

// A model call is a chat span with the GenAI attributes: the model asked
// and the one that answered, the provider's token counts, the cost.
// Without the stage's switch no prompt or reply text is on it; with it,
// they are its events.
func TestAModelCallIsAChatSpanWithoutTextUnlessTheStageRecordsIt(t *testing.T) {
	s := chatSpan(t, false)
	assert.Equal(t, "chat amazon.nova-micro-v1:0", s.Name)
	assert.Equal(t, 3, s.Kind)
	for key, want := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "aws.bedrock",
		"gen_ai.request.model": "amazon.nova-micro-v1:0", "gen_ai.response.model": "anthropic.claude-3-haiku-20240307-v1:0", "gen_ai.agent.name": "wren"} {
		v, ok := attr(s, key)
		require.True(t, ok, key)
		assert.Equal(t, want, *v.String, key)
	}
	in, _ := attr(s, "gen_ai.usage.input_tokens")
	out, _ := attr(s, "gen_ai.usage.output_tokens")
	assert.Equal(t, "120", *in.Int)
	assert.Equal(t, "30", *out.Int)
	cost, ok := attr(s, "conclave.cost_usd")
	require.True(t, ok)
	assert.InDelta(t, models.Cost("anthropic.claude-3-haiku-20240307-v1:0", 120, 30), *cost.Double, 1e-12)
	raw, _ := json.Marshal(s)
	assert.NotContains(t, string(raw), "my private question")
	assert.NotContains(t, string(raw), "the secret plan")
	assert.NotContains(t, string(raw), "you are wren")

	s = chatSpan(t, true)
	raw, _ = json.Marshal(s)
	assert.Contains(t, string(raw), "my private question")
	assert.Contains(t, string(raw), "the secret plan")
	assert.Contains(t, string(raw), "you are wren")
}
