package authorizer_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/team/authorizer"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
)

func TestAPersonsDefaultRateIsAFifthOfTheTeamsAtLeastOne(t *testing.T) {
	for team, want := range map[int]int{1: 1, 4: 1, 5: 1, 9: 1, 10: 2, 24: 4, 25: 5, 2000: 400} {
		assert.Equal(t, want, (&authorizer.RateLimit{PerSecond: team}).UserPerSecond(), "team %d", team)
	}
	assert.Equal(t, 7, (&authorizer.RateLimit{PerSecond: 25, PerUser: 7}).UserPerSecond(), "a set rate wins")
}

// userRated is a handler whose team may make 25 requests a second and each
// person 5 (the default, a fifth), over a key acting for users and tokens.
func userRated(now *time.Time) *authorizer.Handler {
	h := handler(actAsStore())
	h.Tokens = tokens{}
	h.Rate = &authorizer.RateLimit{PerSecond: 25, Counter: memtable.New(), Now: func() time.Time { return *now }}
	return h
}

func marks(t *testing.T, h *authorizer.Handler, req events.APIGatewayV2CustomAuthorizerV2Request) map[string]any {
	t.Helper()
	resp, err := h.Handle(context.Background(), req)
	require.NoError(t, err)
	require.True(t, resp.IsAuthorized, "a limited request is still authorized; the function answers 429")
	return resp.Context
}

// A person's fifth request of a second passes, the sixth is marked with
// the person's rate; another person and the key itself go on; the next
// second starts afresh.
func TestAPersonsRateAtItsBoundary(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for name, req := range map[string]func(user string) events.APIGatewayV2CustomAuthorizerV2Request{
		"acting key": func(user string) events.APIGatewayV2CustomAuthorizerV2Request { return actAsRequest("ck_server", user) },
		"token": func(user string) events.APIGatewayV2CustomAuthorizerV2Request {
			return bearerRequest("GET /v1/agents", map[string]string{"authorization": "Bearer " + user})
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := userRated(&now)
			first, other := "alice", "bob"
			if name == "token" {
				first, other = "good", "admin" // the fake verifier's alice and root
			}
			for i := range 5 {
				assert.NotContains(t, marks(t, h, req(first)), authorizer.ContextRateLimited, "request %d", i+1)
			}
			sixth := marks(t, h, req(first))
			assert.Equal(t, true, sixth[authorizer.ContextRateLimited])
			assert.Equal(t, 1, sixth[authorizer.ContextRetryAfter])
			assert.Equal(t, 5, sixth[authorizer.ContextUserRateLimit], "the person's rate is named")
			assert.NotContains(t, marks(t, h, req(other)), authorizer.ContextRateLimited, "another person has a rate of their own")
			if name == "acting key" {
				assert.NotContains(t, marks(t, h, request("ck_server")), authorizer.ContextRateLimited, "the key's own request counts for the team only")
			}
			now = now.Add(time.Second)
			assert.NotContains(t, marks(t, h, req(first)), authorizer.ContextRateLimited, "a new second, a new count")
		})
	}
}

// Twelve concurrent requests of one person: five pass, seven are marked
// with the person's rate, none with the team's (25 is not reached).
func TestAPersonsRateUnderConcurrency(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h := userRated(&now)
	var mu sync.Mutex
	marked := 0
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			c := marks(t, h, actAsRequest("ck_server", "alice"))
			if c[authorizer.ContextRateLimited] == true {
				assert.Equal(t, 5, c[authorizer.ContextUserRateLimit])
				mu.Lock()
				marked++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 7, marked)
}

// Over the team's rate, the refusal is the team's (no person's rate named)
// and the person's count is not spent on a request that never ran.
func TestTheTeamsRateComesBeforeThePersons(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h := userRated(&now)
	h.Rate.PerSecond, h.Rate.PerUser = 2, 2
	for range 2 {
		require.NotContains(t, marks(t, h, request("ck_server")), authorizer.ContextRateLimited)
	}
	c := marks(t, h, actAsRequest("ck_server", "alice"))
	assert.Equal(t, true, c[authorizer.ContextRateLimited])
	assert.NotContains(t, c, authorizer.ContextUserRateLimit)
	h.Rate.PerSecond = 100
	for range 2 {
		assert.NotContains(t, marks(t, h, actAsRequest("ck_server", "alice")), authorizer.ContextRateLimited, "alice's two are still hers")
	}
}

// The person's rate a stage configures (USER_RATE_LIMIT, loaded as the
// function's cold start loads it) is the one enforced: its third request
// of a second passes, the fourth is marked with 3. Unset, it is a fifth
// of the team's; without a team's limit nothing is counted.
func TestTheConfiguredPersonsRateIsTheOneEnforced(t *testing.T) {
	load := func(env map[string]string) settings.Config {
		cfg, err := settings.Load([]string{settings.EnvTeamRateLimit, settings.EnvUserRateLimit}, func(k string) (string, bool) {
			v, ok := env[k]
			return v, ok
		})
		require.NoError(t, err)
		return cfg
	}
	now := time.Unix(1_800_000_000, 0)
	cfg := load(map[string]string{settings.EnvTeamRateLimit: "25", settings.EnvUserRateLimit: "3"})
	h := handler(actAsStore())
	h.Rate = authorizer.NewRateLimit(cfg.TeamRateLimit, cfg.UserRateLimit, memtable.New())
	require.NotNil(t, h.Rate)
	h.Rate.Now = func() time.Time { return now }
	for i := range 3 {
		assert.NotContains(t, marks(t, h, actAsRequest("ck_server", "alice")), authorizer.ContextRateLimited, "request %d", i+1)
	}
	fourth := marks(t, h, actAsRequest("ck_server", "alice"))
	assert.Equal(t, true, fourth[authorizer.ContextRateLimited])
	assert.Equal(t, 3, fourth[authorizer.ContextUserRateLimit], "the configured rate, not the default 5")

	unset := load(map[string]string{settings.EnvTeamRateLimit: "25"})
	assert.Equal(t, 5, authorizer.NewRateLimit(unset.TeamRateLimit, unset.UserRateLimit, memtable.New()).UserPerSecond())
	noTeam := load(map[string]string{settings.EnvUserRateLimit: "3"})
	assert.Nil(t, authorizer.NewRateLimit(noTeam.TeamRateLimit, noTeam.UserRateLimit, memtable.New()))
}
