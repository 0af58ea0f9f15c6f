package dynamo

import "context"

// rateWindowTTL keeps a second's counter a little past the second (TTL
// deletes within days; nothing reads an old window).
const rateWindowTTL = 120

// CountRequest implements authorizer.RequestCounter: one atomic ADD on the
// team's counter of that second, whose new value is the count.
func (s *Store) CountRequest(ctx context.Context, teamID string, second int64) (int, error) {
	return s.ttlCount(ctx, Key(TeamPK(teamID), RateSK(second)), "requests", second+rateWindowTTL)
}

// CountUserRequest implements authorizer.RequestCounter: one atomic ADD on
// the counter of one person of the team in that second.
func (s *Store) CountUserRequest(ctx context.Context, teamID, userID string, second int64) (int, error) {
	return s.ttlCount(ctx, Key(TeamPK(teamID), UserRateSK(second, userID)), "requests", second+rateWindowTTL)
}
