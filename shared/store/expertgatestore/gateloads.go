package expertgatestore

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// AgentLoads returns every agent's counters (the expert gate's load
// signal).
func (s *Store) AgentLoads(ctx context.Context, teamID string) (map[string]routing.Load, error) {
	out := map[string]routing.Load{}
	err := s.QueryAll(ctx, dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.PrefixLoad, true), func(m map[string]types.AttributeValue) error {
		var it dynamo.LoadItem
		if err := dynamo.Unmarshal(m, &it); err != nil {
			return err
		}
		if it.AgentSlug == "" {
			it.AgentSlug = strings.TrimPrefix(it.SK, dynamo.PrefixLoad)
		}
		out[it.AgentSlug] = routing.Load{ActiveTasks: max(0, it.ActiveTasks), ActiveConversations: max(0, it.ActiveConversations), LatencyMS: it.LatencyMS}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
