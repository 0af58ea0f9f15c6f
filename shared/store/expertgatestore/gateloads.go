package expertgatestore

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// AgentLoads returns every agent's counters (the expert gate's load
// signal), sorted by slug: the query reads the load items in their sort
// key's order, LOAD#<slug>, and NewLoads only checks that.
func (s *Store) AgentLoads(ctx context.Context, teamID string) (routing.Loads, error) {
	var out []routing.AgentLoad
	err := s.QueryAll(ctx, dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.PrefixLoad, true), func(m map[string]types.AttributeValue) error {
		var it dynamo.LoadItem
		if err := dynamo.Unmarshal(m, &it); err != nil {
			return err
		}
		if it.AgentSlug == "" {
			it.AgentSlug = strings.TrimPrefix(it.SK, dynamo.PrefixLoad)
		}
		out = append(out, routing.AgentLoad{Slug: it.AgentSlug, Load: routing.Load{ActiveTasks: max(0, it.ActiveTasks), ActiveConversations: max(0, it.ActiveConversations), LatencyMS: it.LatencyMS}})
		return nil
	})
	if err != nil {
		return routing.Loads{}, err
	}
	return routing.NewLoads(out), nil
}
