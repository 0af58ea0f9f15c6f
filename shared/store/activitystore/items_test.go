package activitystore

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/store/dynamotest"
	"github.com/conclave-ai/conclave/shared/team/activity"
)

func TestActivityItemKeepsEveryStoredField(t *testing.T) {
	e := dynamotest.Filled[activity.Entry](t)
	assert.Equal(t, e, dynamotest.RoundTrip(t, toActivityItem(e)).toEntry(e.TeamID))
}
