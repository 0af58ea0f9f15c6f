package suggestionstore

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing/suggestions"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// A suggestion is one item under its agent (keys.go), and an agent's
// suggestions have one head item beside them whose version every add
// moves. An add reads the head, then the agent's items (a consistent
// query: at most max of them live, and those DynamoDB's TTL has not yet
// deleted), and writes in one transaction the suggestion, the head on the
// version it read, and the deletes of the oldest live ones that would
// pass max: two adds for one agent cannot both write on one version, so
// the count an add acted on is the count it leaves, whatever runs at
// once, and at most max are kept. The head, not the items, carries the
// condition because the items may vanish behind it (the TTL, a delete, an
// accept): a condition on their number could not be written.
//
// Expiry is to the second, as the TTL attribute: a suggestion whose
// expires_at (epoch seconds) is at or before now's is absent to every read
// and write, though DynamoDB deletes it only later (within days). An add
// deletes those it reads on its way (no condition: the TTL may be first),
// and takes an expired item's key if it has the same id.

// Roles of an add's writes.
const (
	roleSuggestion = "suggestion"
	roleHead       = "suggestion head"
	rolePushedOut  = "pushed out suggestion"
)

// addAttempts bounds AddSuggestion's rounds against concurrent adds for
// one agent (and a delete or dismiss of the one it pushes out): each
// round one of them wins, so it is above the adds one agent sees at once
// (the corrections of its team's users, delivered by one queue).
const addAttempts = 10

// maxTxWrites is DynamoDB's bound on the writes of one transaction.
const maxTxWrites = 100

// suggestionItem is an example suggestion. Expires is the suggestion's
// ExpiresAt as given; expires_at is the same time in epoch seconds, the
// TTL attribute, which every condition and filter reads.
type suggestionItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Type      string `dynamodbav:"type"`
	ExpiresAt int64  `dynamodbav:"expires_at"`

	ID             string     `dynamodbav:"id"`
	Agent          string     `dynamodbav:"agent"`
	Skill          string     `dynamodbav:"skill"`
	Content        string     `dynamodbav:"content"`
	ConversationID string     `dynamodbav:"conversation_id"`
	DecisionID     string     `dynamodbav:"decision_id"`
	RoutedTo       string     `dynamodbav:"routed_to"`
	Kind           string     `dynamodbav:"kind"`
	RatedLow       bool       `dynamodbav:"rated_low"`
	CreatedAt      time.Time  `dynamodbav:"created_at"`
	Expires        time.Time  `dynamodbav:"expires"`
	DismissedAt    *time.Time `dynamodbav:"dismissed_at,omitempty"`
}

// headItem is the head of an agent's suggestions, written only by the
// adds' updates. Its expiry is its latest suggestion's: once they have
// all expired the TTL may delete it, and the next add starts it again.
type headItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Type      string `dynamodbav:"type"`
	Version   int64  `dynamodbav:"version"`
	ExpiresAt int64  `dynamodbav:"expires_at"`
}

// toSuggestionItem is the stored form of sg (times in UTC); the team is
// the key's.
func toSuggestionItem(sg suggestions.Suggestion) suggestionItem {
	return suggestionItem{
		PK: dynamo.TeamPK(sg.TeamID), SK: dynamo.SuggestionSK(sg.Agent, sg.ID), Type: "suggestion", ExpiresAt: dynamo.TTL(sg.ExpiresAt),
		ID: sg.ID, Agent: sg.Agent, Skill: sg.Skill, Content: sg.Content, ConversationID: sg.ConversationID, DecisionID: sg.DecisionID,
		RoutedTo: sg.RoutedTo, Kind: sg.Kind, RatedLow: sg.RatedLow, CreatedAt: sg.CreatedAt.UTC(), Expires: sg.ExpiresAt.UTC(),
	}
}

// toSuggestion is the suggestion the item holds; the team is the key's.
func (it suggestionItem) toSuggestion(teamID string) suggestions.Suggestion {
	return suggestions.Suggestion{ID: it.ID, TeamID: teamID, Agent: it.Agent, Skill: it.Skill, Content: it.Content,
		ConversationID: it.ConversationID, DecisionID: it.DecisionID, RoutedTo: it.RoutedTo, Kind: it.Kind, RatedLow: it.RatedLow,
		CreatedAt: it.CreatedAt, ExpiresAt: it.Expires}
}

// live: the item has not expired at now (to the second, as the TTL).
func (it suggestionItem) live(now time.Time) bool { return it.ExpiresAt > dynamo.TTL(now) }

func fromSuggestionItem(m map[string]types.AttributeValue) (suggestionItem, error) {
	var it suggestionItem
	err := dynamo.Unmarshal(m, &it)
	return it, err
}

// AddSuggestion implements suggestions.Store: the head read, the agent's
// items queried, and one transaction (see the comment at the top) of the
// suggestion (its key free, or its item expired), the head (on the
// version read, or absent), the oldest live suggestions that would pass
// max (existing) and the expired ones read (whatever they are now). A
// suggestion of the id live already, dismissed or not, is (false, nil),
// with nothing written. A round whose head moved meanwhile, or whose
// pushed-out suggestion went, is tried again from the reads; after
// addAttempts, ECONFLICT (TransactionConflict): a redelivery tries again.
// limit (the port's max) is at least 1 (EINVALID otherwise). The oldest
// are by created_at, then id; a dismissed suggestion holds its place
// until it is pushed out. Were the agent's live suggestions more than a
// transaction can delete (a limit lowered by more than 97), an add
// deletes 97 of them: the next adds delete the rest.
func (s *Store) AddSuggestion(ctx context.Context, sg suggestions.Suggestion, limit int) (bool, error) {
	if limit < 1 {
		return false, apperr.Invalid("max", "at most %d suggestions kept: at least one must be", limit)
	}
	it := toSuggestionItem(sg)
	for attempt := 1; ; attempt++ {
		added, again, err := s.addOn(ctx, sg.TeamID, it, limit, time.Now())
		if !again || attempt == addAttempts {
			return added, err
		}
		select {
		case <-ctx.Done():
			return false, err
		case <-time.After(time.Duration(2+rand.IntN(10*attempt)) * time.Millisecond):
		}
	}
}

// addOn is one round of AddSuggestion at now. again: the round lost to a
// concurrent change and can be tried again.
func (s *Store) addOn(ctx context.Context, teamID string, it suggestionItem, limit int, now time.Time) (added, again bool, err error) {
	hk := headKey(teamID, it.Agent)
	m, err := s.GetItem(ctx, hk)
	if err != nil {
		return false, false, err
	}
	var head headItem
	if m != nil {
		if err := dynamo.Unmarshal(m, &head); err != nil {
			return false, false, dynamo.Internal(err, "unmarshal")
		}
	}
	items, err := s.agentItems(ctx, teamID, it.Agent)
	if err != nil {
		return false, false, err
	}
	var live, expired []suggestionItem
	for _, x := range items {
		switch {
		case !x.live(now):
			if x.ID != it.ID {
				expired = append(expired, x)
			}
		case x.ID == it.ID:
			return false, false, nil
		default:
			live = append(live, x)
		}
	}
	slices.SortFunc(live, func(a, b suggestionItem) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})

	tx := s.Txn()
	tx.Put(roleSuggestion, it, dynamo.Name(dynamo.AttrPK).AttributeNotExists().Or(expiredBy(now)))
	u := expression.Set(dynamo.Name("type"), dynamo.Value("suggestion_head")).Set(dynamo.Name("version"), dynamo.Value(head.Version+1)).
		Set(dynamo.Name("expires_at"), dynamo.Value(max(head.ExpiresAt, it.ExpiresAt)))
	read := dynamo.Name(dynamo.AttrPK).AttributeNotExists()
	if m != nil {
		read = dynamo.Name("version").Equal(dynamo.Value(head.Version))
	}
	tx.Update(roleHead, hk, u, read)
	room := maxTxWrites - 2
	out := min(max(len(live)-limit+1, 0), room)
	for _, x := range live[:out] {
		tx.Delete(rolePushedOut, dynamo.Key(x.PK, x.SK), dynamo.Name(dynamo.AttrPK).AttributeExists())
	}
	for _, x := range expired[:min(len(expired), room-out)] {
		tx.Add(rolePushedOut, types.TransactWriteItem{Delete: &types.Delete{TableName: &s.Table, Key: dynamo.Key(x.PK, x.SK)}})
	}
	err = tx.Run(ctx)
	c, ok := dynamo.AsCanceled(err)
	if !ok {
		return err == nil, false, err
	}
	retry := dynamo.RetryConflict(err, "the suggestion conflicted with concurrent ones; try again")
	switch c.Role {
	case roleSuggestion:
		// Stored meanwhile (by a concurrent delivery of the same one).
		return false, false, nil
	case roleHead, rolePushedOut, "":
		// Another add moved the head, the suggestion to push out went
		// (a delete, an accept), or a concurrent transaction touched an
		// item: the reads are stale.
		return false, true, retry
	}
	return false, false, retry
}

// agentItems are every item of the agent's suggestions, expired ones
// too, read consistently (an add must see every add before it).
func (s *Store) agentItems(ctx context.Context, teamID, agent string) ([]suggestionItem, error) {
	in := dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.SuggestionPrefix(agent), true)
	in.ConsistentRead = aws.Bool(true)
	var out []suggestionItem
	err := s.QueryAll(ctx, in, func(m map[string]types.AttributeValue) error {
		it, err := fromSuggestionItem(m)
		out = append(out, it)
		return err
	})
	return out, err
}

// GetSuggestion implements suggestions.Store (ENOTFOUND for an unknown id,
// an expired or dismissed suggestion, or another team's: the key holds the
// team).
func (s *Store) GetSuggestion(ctx context.Context, teamID, agent, id string) (suggestions.Suggestion, error) {
	it, err := dynamo.Get(ctx, s, suggestionKey(teamID, agent, id), "example suggestion", id, fromSuggestionItem)
	if err != nil {
		return suggestions.Suggestion{}, err
	}
	if !it.live(time.Now()) || it.DismissedAt != nil {
		return suggestions.Suggestion{}, apperr.NotFound("example suggestion", id)
	}
	return it.toSuggestion(teamID), nil
}

// ListSuggestions implements suggestions.Store: the agent's live,
// undismissed suggestions newest first (their ids sort by time). The
// expired and dismissed are filtered out after the page's limit is
// counted, so a page may hold fewer than its limit with a next token.
func (s *Store) ListSuggestions(ctx context.Context, teamID, agent string, p paging.Page) ([]suggestions.Suggestion, string, error) {
	in, err := dynamo.BuiltQuery("", dynamo.KeyIs(dynamo.AttrPK, dynamo.TeamPK(teamID)).And(dynamo.HasPrefix(dynamo.AttrSK, dynamo.SuggestionPrefix(agent))),
		liveBy(time.Now()).And(dynamo.Name("dismissed_at").AttributeNotExists()), false)
	if err != nil {
		return nil, "", dynamo.Internal(err, "expression")
	}
	list := []suggestions.Suggestion{}
	next, err := s.QueryPage(ctx, in, "suggestions:"+teamID+"#"+agent, p, func(m map[string]types.AttributeValue) error {
		it, err := fromSuggestionItem(m)
		list = append(list, it.toSuggestion(teamID))
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return list, next, nil
}

// DeleteSuggestion implements suggestions.Store: a delete conditioned on
// the suggestion existing unexpired, dismissed or not (ENOTFOUND
// otherwise).
func (s *Store) DeleteSuggestion(ctx context.Context, teamID, agent, id string) error {
	cond, err := dynamo.Build(nil, dynamo.Name(dynamo.AttrPK).AttributeExists().And(liveBy(time.Now())))
	if err != nil {
		return dynamo.Internal(err, "expression")
	}
	_, err = s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.Table, Key: suggestionKey(teamID, agent, id), ConditionExpression: cond.Condition(),
		ExpressionAttributeNames: cond.Names(), ExpressionAttributeValues: cond.Values(),
	})
	if _, failed := dynamo.ConditionFailed(err); failed {
		return apperr.NotFound("example suggestion", id)
	}
	if err != nil {
		return dynamo.Internal(err, "DeleteItem")
	}
	return nil
}

// DismissSuggestion implements suggestions.Store: dismissed_at set on a
// suggestion existing unexpired and not dismissed (ENOTFOUND otherwise).
// The item stays, holding its place and its id, until it expires or an
// add pushes it out.
func (s *Store) DismissSuggestion(ctx context.Context, teamID, agent, id string) error {
	now := time.Now()
	u := expression.Set(dynamo.Name("dismissed_at"), dynamo.Value(now.UTC()))
	cond, err := dynamo.Build(&u, dynamo.Name(dynamo.AttrPK).AttributeExists().And(liveBy(now), dynamo.Name("dismissed_at").AttributeNotExists()))
	if err != nil {
		return dynamo.Internal(err, "expression")
	}
	_, err = s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.Table, Key: suggestionKey(teamID, agent, id), UpdateExpression: cond.Update(), ConditionExpression: cond.Condition(),
		ExpressionAttributeNames: cond.Names(), ExpressionAttributeValues: cond.Values(),
	})
	if _, failed := dynamo.ConditionFailed(err); failed {
		return apperr.NotFound("example suggestion", id)
	}
	if err != nil {
		return dynamo.Internal(err, "UpdateItem")
	}
	return nil
}

// liveBy is the condition "unexpired at now" (to the second, as the TTL).
func liveBy(now time.Time) expression.ConditionBuilder {
	return dynamo.Name("expires_at").GreaterThan(dynamo.Value(dynamo.TTL(now)))
}

// expiredBy is the condition "expired at now".
func expiredBy(now time.Time) expression.ConditionBuilder {
	return dynamo.Name("expires_at").LessThanEqual(dynamo.Value(dynamo.TTL(now)))
}

func suggestionKey(teamID, agent, id string) map[string]types.AttributeValue {
	return dynamo.Key(dynamo.TeamPK(teamID), dynamo.SuggestionSK(agent, id))
}

func headKey(teamID, agent string) map[string]types.AttributeValue {
	return dynamo.Key(dynamo.TeamPK(teamID), dynamo.SuggestionHeadSK(agent))
}
