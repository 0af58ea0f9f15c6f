package teamstore

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/store/dynamotest"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

func TestTeamItemsKeepEveryStoredField(t *testing.T) {
	t.Run("team and key", func(t *testing.T) {
		team := dynamotest.Filled[teams.Team](t)
		assert.Equal(t, team, dynamotest.RoundTrip(t, toTeamItem(team)).toTeam())
		k := dynamotest.Filled[teams.APIKey](t)
		assert.Equal(t, k, dynamotest.RoundTrip(t, toAPIKeyItem(k, "hash")).toKey())
	})
}

func TestTeamItemKeys(t *testing.T) {
	assert.NotContains(t, dynamotest.MustItem(t, toTeamItem(teams.Team{ID: "t1"})), "default_agent")
}
