package decisionstore

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/store/dynamotest"
)

func TestDecisionItemsKeepEveryStoredField(t *testing.T) {
	t.Run("decision", func(t *testing.T) {
		d := dynamotest.Filled[cascade.Decision](t)
		d.TeamID = "" // the key holds it
		for i := range d.Scores {
			d.Scores[i].Explicit, d.Scores[i].Override = false, false // scoring internals
		}
		assert.Equal(t, d, dynamotest.RoundTrip(t, ToDecisionItem(d)).toDecision())
		d.Scores, d.SelectedAgents, d.Attempts, d.Aggregation, d.Dimensions = nil, []string{}, []cascade.Attempt{}, nil, map[string]float64{}
		assert.Equal(t, d, dynamotest.RoundTrip(t, ToDecisionItem(d)).toDecision(), "nil and empty stay apart")
	})
}

func TestDecisionItemKeys(t *testing.T) {
	deadline := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := ToDecisionItem(cascade.Decision{ID: "rdec_1", TeamID: "t1", ConversationID: "conv_1", CreatedAt: deadline})
	assert.Equal(t, []string{"TEAM#t1", "RDEC#rdec_1", "TEAM#t1#CONV#conv_1", "RDEC#rdec_1"}, []string{d.PK, d.SK, d.GSI1PK, d.GSI1SK})
	assert.Equal(t, deadline.Add(decisionRetention).Unix(), d.ExpiresAt)

	m := dynamotest.MustItem(t, ToDecisionItem(cascade.Decision{ID: "rdec_1", TeamID: "t1"}))
	assert.Equal(t, &types.AttributeValueMemberBOOL{Value: false}, m["fallback_used"], "fallback_used = false must match")
}
