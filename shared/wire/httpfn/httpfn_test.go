package httpfn_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/wire/httpfn"
)

func deps() lambdafn.Deps {
	return lambdafn.Deps{Name: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func handle(keys ...string) httpfn.Register {
	return func(_ lambdafn.Deps, _ *dynamo.Store, rt *httpapi.Router) {
		for _, k := range keys {
			rt.Handle(k, func(context.Context, *httpapi.Request) (httpapi.Response, error) { return httpapi.NoContent(), nil })
		}
	}
}

// A read-only function refuses to build with a route that writes: that
// route would run without idempotency.
func TestReadOnlyRefusesRoutesThatWrite(t *testing.T) {
	// GIVEN a read-only function with only GET routes
	build, router := httpfn.NewReadOnly(handle("GET /v1/things", "GET /v1/things/{id}"))
	// THEN it builds, and keeps no idempotency records
	h, err := build(deps())
	require.NoError(t, err)
	assert.NotNil(t, h)
	rt, err := router(deps())
	require.NoError(t, err)
	assert.False(t, rt.Replays())

	// GIVEN one with a POST among its routes
	build, _ = httpfn.NewReadOnly(handle("GET /v1/things", "POST /v1/things"))
	// WHEN it is built THEN it fails and names the route
	_, err = build(deps())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "POST /v1/things")
}

func TestNewReplaysIdempotentPOSTs(t *testing.T) {
	_, router := httpfn.New(handle("POST /v1/things"))
	rt, err := router(deps())
	require.NoError(t, err)
	assert.True(t, rt.Replays())
}

// A function whose wiring fails on a setting does not build: its cold
// start fails with the wiring's error, and so does its router's builder.
func TestNewFallibleFailsTheBuild(t *testing.T) {
	refused := errors.New("MODEL_PROVIDER: no such provider")
	build, router := httpfn.NewFallible(func(lambdafn.Deps, *dynamo.Store, *httpapi.Router) error { return refused })
	_, err := build(deps())
	assert.ErrorIs(t, err, refused)
	_, err = router(deps())
	assert.ErrorIs(t, err, refused)
}
