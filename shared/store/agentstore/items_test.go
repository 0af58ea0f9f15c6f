package agentstore

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/store/dynamotest"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

func TestAgentItemsKeepEveryStoredField(t *testing.T) {
	t.Run("agent", func(t *testing.T) {
		a := dynamotest.Filled[agents.Agent](t)
		a.IsDefault = false // the team item's default_agent
		for i := range a.Skills {
			a.Skills[i].ExampleCount = 0 // a list's count of the examples, never stored
		}
		assert.Equal(t, a, dynamotest.RoundTrip(t, toAgentItem(a)).toAgent())
		a.Model, a.Skills = nil, []agents.Skill{}
		assert.Equal(t, a, dynamotest.RoundTrip(t, toAgentItem(a)).toAgent())
	})
}
