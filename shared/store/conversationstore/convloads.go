package conversationstore

import (
	"sort"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// convCounter moves an agent's open-conversation count by delta.
func convCounter(t *dynamo.Txn, teamID, slug string, delta int) {
	t.Update(dynamo.RoleCounter, dynamo.Key(dynamo.TeamPK(teamID), dynamo.LoadSK(slug)),
		dynamo.LoadUpdate(teamID, slug).Add(dynamo.Name("active_conversations"), dynamo.Value(delta)), expression.ConditionBuilder{})
}

// moveCurrent moves the open-conversation count from the conversation's
// previous current agent to its new one, and sets the reply latency of the
// agents in latency (nil: none). An agent's load item is written once
// whatever changes on it: a transaction may not touch an item twice.
func moveCurrent(t *dynamo.Txn, teamID, prev, cur string, latency map[string]float64) {
	delta := map[string]int{}
	if prev != cur {
		if prev != "" {
			delta[prev]--
		}
		if cur != "" {
			delta[cur]++
		}
	}
	slugs := make([]string, 0, len(delta)+len(latency))
	for slug := range delta {
		slugs = append(slugs, slug)
	}
	for slug := range latency {
		if _, ok := delta[slug]; !ok {
			slugs = append(slugs, slug)
		}
	}
	sort.Strings(slugs)
	for _, slug := range slugs {
		u := dynamo.LoadUpdate(teamID, slug)
		if d := delta[slug]; d != 0 {
			u = u.Add(dynamo.Name("active_conversations"), dynamo.Value(d))
		}
		if ms, ok := latency[slug]; ok {
			u = u.Set(dynamo.Name("latency_ms"), dynamo.Value(ms))
		}
		t.Update(dynamo.RoleCounter, dynamo.Key(dynamo.TeamPK(teamID), dynamo.LoadSK(slug)), u, expression.ConditionBuilder{})
	}
}
