package expertgatefn_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/wire/expertgatefn"
)

// ROUTING_EMBEDDER=titan wires without the wordllama files or a network
// call; a value nobody knows fails the cold start, naming the known ones.
func TestTheStageEmbedderIsWired(t *testing.T) {
	d := lambdafn.Deps{Name: "expert-gate", AWS: aws.Config{Region: "us-east-1"}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Config: settings.Config{TableName: "t", Embedder: settings.EmbedderTitan}}
	h, err := expertgatefn.Build(d)
	require.NoError(t, err)
	assert.NotNil(t, h)

	d.Config.Embedder = "titan-v1"
	_, err = expertgatefn.Build(d)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "wordllama, titan or none")
}
