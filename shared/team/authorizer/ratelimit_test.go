package authorizer_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/team/authorizer"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/teamfake"
)

func limitedHandler(t *testing.T, counter authorizer.RequestCounter, now *time.Time) (*authorizer.Handler, string) {
	table := memtable.New() // the teams and the request counter
	svc := teams.NewService(teamfake.New(table))
	_, key, err := svc.CreateTeam(context.Background(), "rated")
	require.NoError(t, err)
	if counter == nil {
		counter = table
	}
	h := &authorizer.Handler{Teams: svc, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Rate: &authorizer.RateLimit{PerSecond: 5, Counter: counter, Now: func() time.Time { return *now }}}
	return h, key.Secret
}

func authorize(t *testing.T, h *authorizer.Handler, secret string) events.APIGatewayV2CustomAuthorizerSimpleResponse {
	resp, err := h.Handle(context.Background(), events.APIGatewayV2CustomAuthorizerV2Request{Headers: map[string]string{"x-api-key": secret}})
	require.NoError(t, err)
	require.True(t, resp.IsAuthorized, "a limited request is still authorized; the function answers 429")
	return resp
}

// Twelve concurrent requests of one team in one second: the first five
// pass, the other seven are marked; the next second starts afresh.
func TestTeamRateLimitMarksRequestsOverTheLimit(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h, secret := limitedHandler(t, nil, &now)
	var wg sync.WaitGroup
	var mu sync.Mutex
	marked := 0
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if authorize(t, h, secret).Context[authorizer.ContextRateLimited] == true {
				mu.Lock()
				marked++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 7, marked)
	now = now.Add(time.Second)
	assert.NotContains(t, authorize(t, h, secret).Context, authorizer.ContextRateLimited, "a new second, a new count")
}

type failingCounter struct{}

func (failingCounter) CountRequest(context.Context, string, int64) (int, error) {
	return 0, errors.New("throttled")
}

func (failingCounter) CountUserRequest(context.Context, string, string, int64) (int, error) {
	return 0, errors.New("throttled")
}

// A limiter that cannot count lets requests through.
func TestFailingCounterLetsRequestsThrough(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h, secret := limitedHandler(t, failingCounter{}, &now)
	for range 10 {
		assert.NotContains(t, authorize(t, h, secret).Context, authorizer.ContextRateLimited)
	}
}

// A rate of 0 switches the limiter off: no request is ever marked.
func TestARateOfZeroLimitsNothing(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h, secret := limitedHandler(t, nil, &now)
	h.Rate.PerSecond = 0
	for range 10 {
		assert.NotContains(t, authorize(t, h, secret).Context, authorizer.ContextRateLimited)
	}
}
