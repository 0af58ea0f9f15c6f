package memstore

import (
	"context"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
)

// The references from a request's Idempotency-Key to what its create
// stored, as the DynamoDB stores write them in the create's transaction
// (dynamo.Txn.Keyed): refTaken before a create's writes, refSet with
// them, both under s.mu.

// refTaken returns idempotency.Replayed when the request (ctx) is for a
// create of kind whose key already stored one.
func (s *Store) refTaken(ctx context.Context, teamID, kind string) error {
	k := idempotency.KeyFor(ctx, kind)
	if k == "" {
		return nil
	}
	if id, ok := s.refs[key{teamID, kind + "#" + k}]; ok {
		return idempotency.Replayed{Kind: kind, ID: id}
	}
	return nil
}

// refSet records that the request's create of kind stored id.
func (s *Store) refSet(ctx context.Context, teamID, kind, id string) {
	k := idempotency.KeyFor(ctx, kind)
	if k == "" {
		return
	}
	if s.refs == nil {
		s.refs = map[key]string{}
	}
	s.refs[key{teamID, kind + "#" + k}] = id
}

// ReadRef implements idempotency.Refs.
func (s *Store) ReadRef(_ context.Context, teamID, kind, k string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if kind == conversations.RefKind {
		return append([]string(nil), s.turnRefs[key{teamID, k}]...), nil
	}
	if id, ok := s.refs[key{teamID, kind + "#" + k}]; ok {
		return []string{id}, nil
	}
	return nil, nil
}

var _ idempotency.Refs = (*Store)(nil)
