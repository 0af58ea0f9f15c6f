package tasks

import "context"

// ReleaseToConversation is a placeholder until the results branch lands
// (TEMP: replaced by the conditional write).
func (s *Service) ReleaseToConversation(ctx context.Context, teamID, id string) (Task, error) {
	return s.Get(ctx, teamID, id)
}
