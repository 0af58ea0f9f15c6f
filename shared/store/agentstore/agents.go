package agentstore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// agentItem is an agent; its personality, skills and model are nested maps
// and lists of the item structs below. IsDefault is not stored: it is the
// team item's default_agent.
type agentItem struct {
	PK          string          `dynamodbav:"pk"`
	SK          string          `dynamodbav:"sk"`
	Type        string          `dynamodbav:"type"`
	TeamID      string          `dynamodbav:"team_id"`
	Slug        string          `dynamodbav:"slug"`
	Name        string          `dynamodbav:"name"`
	Tagline     string          `dynamodbav:"tagline"`
	Personality personalityItem `dynamodbav:"personality"`
	Status      string          `dynamodbav:"status"`
	Skills      []skillItem     `dynamodbav:"skills"`
	Model       *modelItem      `dynamodbav:"model,omitempty"`
	Remote      *remoteItem     `dynamodbav:"a2a,omitempty"`
	// gsi3: an A2A agent's next card check (CardDueGSI3PK).
	GSI3PK    string    `dynamodbav:"gsi3pk,omitempty"`
	GSI3SK    string    `dynamodbav:"gsi3sk,omitempty"`
	Version   int       `dynamodbav:"version"`
	CreatedAt time.Time `dynamodbav:"created_at"`
	UpdatedAt time.Time `dynamodbav:"updated_at"`
}

type personalityItem struct {
	Formality      float64 `dynamodbav:"formality"`
	Humor          float64 `dynamodbav:"humor"`
	TechnicalDepth float64 `dynamodbav:"technical_depth"`
	Description    string  `dynamodbav:"description"`
}

type skillItem struct {
	Name                     string   `dynamodbav:"name"`
	Description              string   `dynamodbav:"description"`
	Domains                  []string `dynamodbav:"domains,omitempty"`
	Actions                  []string `dynamodbav:"actions,omitempty"`
	Keywords                 []string `dynamodbav:"keywords,omitempty"`
	Tools                    []string `dynamodbav:"tools,omitempty"`
	Packs                    []string `dynamodbav:"packs,omitempty"`
	Priority                 int      `dynamodbav:"priority"`
	InternalOnly             bool     `dynamodbav:"internal_only,omitempty"`
	RequiresExplicitKeywords bool     `dynamodbav:"requires_explicit_keywords,omitempty"`
	OverrideContinuity       bool     `dynamodbav:"override_continuity,omitempty"`
	RequiresEditor           bool     `dynamodbav:"requires_editor,omitempty"`
	EditorTypes              []string `dynamodbav:"editor_types,omitempty"`
	RequiresImageContext     bool     `dynamodbav:"requires_image_context,omitempty"`
	SupportsHITL             bool     `dynamodbav:"supports_hitl,omitempty"`
	SystemPrompt             string   `dynamodbav:"system_prompt,omitempty"`
	ContextLoaders           []string `dynamodbav:"context_loaders,omitempty"`
	Kind                     string   `dynamodbav:"kind,omitempty"`
	Public                   bool     `dynamodbav:"public,omitempty"`
	Examples                 []string `dynamodbav:"examples,omitempty"`
	// ExampleCount is a read's, never stored.
	ExampleCount int `dynamodbav:"-"`
}

type modelItem struct {
	Provider string `dynamodbav:"provider,omitempty"`
	ID       string `dynamodbav:"id,omitempty"`
	Script   string `dynamodbav:"script,omitempty"`
}

// remoteItem is an external A2A agent's card and state (agents.Remote):
// the secret's id, never the credential.
type remoteItem struct {
	CardURL         string    `dynamodbav:"card_url"`
	Endpoint        string    `dynamodbav:"endpoint"`
	ProtocolVersion string    `dynamodbav:"protocol_version"`
	CardName        string    `dynamodbav:"card_name"`
	CardVersion     string    `dynamodbav:"card_version"`
	HasCredential   bool      `dynamodbav:"has_credential"`
	SecretID        string    `dynamodbav:"secret_id,omitempty"`
	Available       bool      `dynamodbav:"available"`
	FetchedAt       time.Time `dynamodbav:"fetched_at"`
	CheckedAt       time.Time `dynamodbav:"checked_at"`
	LastError       string    `dynamodbav:"last_error,omitempty"`
}

func toAgentItem(a agents.Agent) agentItem {
	it := agentItem{
		PK: dynamo.TeamPK(a.TeamID), SK: dynamo.AgentSK(a.Slug), Type: "agent", TeamID: a.TeamID, Slug: a.Slug,
		Name: a.Name, Tagline: a.Tagline, Personality: personalityItem(a.Personality), Status: a.Status,
		Version: a.Version, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
	}
	if a.Skills != nil {
		it.Skills = make([]skillItem, len(a.Skills))
		for i, sk := range a.Skills {
			it.Skills[i] = skillItem(sk)
		}
	}
	if a.Model != nil {
		m := modelItem(*a.Model)
		it.Model = &m
	}
	if a.Remote != nil {
		r := remoteItem(*a.Remote)
		it.Remote = &r
		it.GSI3PK, it.GSI3SK = dynamo.CardDueGSI3PK, dynamo.DueGSI3SK(a.Remote.NextCheck(), a.TeamID, a.Slug)
	}
	return it
}

func (it agentItem) toAgent() agents.Agent {
	a := agents.Agent{
		TeamID: it.TeamID, Slug: it.Slug, Name: it.Name, Tagline: it.Tagline,
		Personality: agents.Personality(it.Personality), Status: it.Status, Skills: make([]agents.Skill, len(it.Skills)),
		Version: it.Version, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt,
	}
	for i, sk := range it.Skills {
		a.Skills[i] = agents.Skill(sk)
	}
	if it.Model != nil {
		m := agents.Model(*it.Model)
		a.Model = &m
	}
	if it.Remote != nil {
		r := agents.Remote(*it.Remote)
		a.Remote = &r
	}
	return a
}

func fromAgentItem(m map[string]types.AttributeValue) (agents.Agent, error) {
	var it agentItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return agents.Agent{}, err
	}
	return it.toAgent(), nil
}

// CreateAgent implements agents.Store. The team must exist and the slug be
// free, both checked in the same transaction.
func (s *Store) CreateAgent(ctx context.Context, a agents.Agent) error {
	tx := s.Txn()
	tx.Exists(dynamo.RoleTeam, dynamo.Key(dynamo.TeamPK(a.TeamID), dynamo.SKTeam))
	tx.Create(dynamo.RoleAgent, toAgentItem(a))
	err := tx.Run(ctx)
	if c, ok := dynamo.AsCanceled(err); ok {
		if c.Role == dynamo.RoleTeam {
			return apperr.NotFound("team", a.TeamID)
		}
		return apperr.New(apperr.ECONFLICT, "an agent with slug %q already exists", a.Slug).WithReason("DuplicateSlug")
	}
	return err
}

// GetAgent implements agents.Store.
func (s *Store) GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error) {
	return dynamo.Get(ctx, s, dynamo.Key(dynamo.TeamPK(teamID), dynamo.AgentSK(slug)), "agent", slug, fromAgentItem)
}

// ListAgents implements agents.Store. A status filter is applied by
// DynamoDB after the key condition, so a page may hold fewer than Limit
// items while a next token is still returned.
func (s *Store) ListAgents(ctx context.Context, teamID string, f agents.Filter, p paging.Page) ([]agents.Agent, string, error) {
	var filter expression.ConditionBuilder
	if f.Status != "" {
		filter = dynamo.Name("status").Equal(dynamo.Value(f.Status))
	}
	in, err := dynamo.BuiltQuery("", dynamo.KeyIs(dynamo.AttrPK, dynamo.TeamPK(teamID)).And(dynamo.HasPrefix(dynamo.AttrSK, dynamo.PrefixAgent)), filter, true)
	if err != nil {
		return nil, "", dynamo.Internal(err, "expression")
	}
	list := []agents.Agent{}
	next, err := s.QueryPage(ctx, in, "agents:"+teamID, p, func(m map[string]types.AttributeValue) error {
		a, err := fromAgentItem(m)
		list = append(list, a)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return list, next, nil
}

// UpdateAgent implements agents.Store. A lost race is explained from the
// item the failed write returns (ALL_OLD), not a second read.
func (s *Store) UpdateAgent(ctx context.Context, a agents.Agent) error {
	item, err := dynamo.Marshal(toAgentItem(a))
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	e, err := dynamo.Build(nil, dynamo.Name(dynamo.AttrPK).AttributeExists().And(dynamo.Name("version").Equal(dynamo.Value(a.Version-1))))
	if err != nil {
		return dynamo.Internal(err, "expression")
	}
	_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.Table, Item: item, ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, failed := dynamo.ConditionFailed(err); failed {
		if old == nil {
			return apperr.NotFound("agent", a.Slug)
		}
		cur, err := fromAgentItem(old)
		if err != nil {
			return dynamo.Internal(err, "unmarshal")
		}
		return apperr.New(apperr.ECONFLICT, "agent %q was changed by another request", a.Slug).WithDetail("current_version", cur.Version)
	}
	if err != nil {
		return dynamo.Internal(err, "PutItem")
	}
	return nil
}

// SetStatus implements agents.Store. Leaving active is conditioned on the
// agent not being the team's default, in the same transaction, so a
// concurrent "set default" cannot leave the team with a paused default.
func (s *Store) SetStatus(ctx context.Context, teamID, slug, status string, at time.Time) (agents.Agent, error) {
	tx := s.Txn()
	tx.Update(dynamo.RoleAgent, dynamo.Key(dynamo.TeamPK(teamID), dynamo.AgentSK(slug)),
		expression.Set(dynamo.Name("status"), dynamo.Value(status)).Set(dynamo.Name("updated_at"), dynamo.Value(at)).Set(dynamo.Name("version"), dynamo.Name("version").Plus(dynamo.Value(1))),
		dynamo.Name(dynamo.AttrPK).AttributeExists())
	if status != agents.StatusActive {
		tx.Check(dynamo.RoleTeamDefault, dynamo.Key(dynamo.TeamPK(teamID), dynamo.SKTeam),
			dynamo.Name("default_agent").AttributeNotExists().Or(dynamo.Name("default_agent").NotEqual(dynamo.Value(slug))))
	}
	err := tx.Run(ctx)
	if c, ok := dynamo.AsCanceled(err); ok {
		if c.Role == dynamo.RoleAgent {
			return agents.Agent{}, apperr.NotFound("agent", slug)
		}
		return agents.Agent{}, apperr.New(apperr.ECONFLICT, "%q is the team's default agent and must stay active; set another default first", slug).
			WithReason("DefaultAgent")
	}
	if err != nil {
		return agents.Agent{}, err
	}
	return s.GetAgent(ctx, teamID, slug)
}

// SetDefault implements agents.Store. An agent that is not active is
// explained from the item its failed check returns (ALL_OLD).
func (s *Store) SetDefault(ctx context.Context, teamID, slug string) error {
	tx := s.Txn()
	tx.Check(dynamo.RoleAgent, dynamo.Key(dynamo.TeamPK(teamID), dynamo.AgentSK(slug)), dynamo.Name("status").Equal(dynamo.Value(agents.StatusActive)))
	tx.Update(dynamo.RoleTeam, dynamo.Key(dynamo.TeamPK(teamID), dynamo.SKTeam), expression.Set(dynamo.Name("default_agent"), dynamo.Value(slug)), dynamo.Name(dynamo.AttrPK).AttributeExists())
	err := tx.Run(ctx)
	if c, ok := dynamo.AsCanceled(err); ok {
		if c.Role != dynamo.RoleAgent {
			return apperr.NotFound("team", teamID)
		}
		if c.Old == nil {
			return apperr.NotFound("agent", slug)
		}
		a, err := fromAgentItem(c.Old)
		if err != nil {
			return dynamo.Internal(err, "unmarshal")
		}
		return apperr.New(apperr.ECONFLICT, "agent %q is %s; only an active agent can be the default", slug, a.Status).
			WithDetail("status", a.Status)
	}
	return err
}

// DefaultAgent implements agents.Store.
func (s *Store) DefaultAgent(ctx context.Context, teamID string) (string, error) {
	t, err := s.GetTeam(ctx, teamID)
	if err != nil {
		return "", err
	}
	return t.DefaultAgent, nil
}

// allAgents reads every page of a team's agents with a status filter.
func (s *Store) allAgents(ctx context.Context, teamID, status string) ([]agents.Agent, error) {
	var out []agents.Agent
	p := paging.Page{Limit: paging.MaxLimit}
	for {
		list, next, err := s.ListAgents(ctx, teamID, agents.Filter{Status: status}, p)
		if err != nil {
			return nil, err
		}
		out = append(out, list...)
		if next == "" {
			return out, nil
		}
		p.Token = next
	}
}

// DueCards implements agents.DueCards: the A2A agents, of every team,
// whose next card check is before before (gsi3), at most limit.
func (s *Store) DueCards(ctx context.Context, before time.Time, limit int) ([]agents.Agent, error) {
	var out []agents.Agent
	err := s.DueBefore(ctx, dynamo.CardDueGSI3PK, before, limit, func(m map[string]types.AttributeValue) error {
		a, err := fromAgentItem(m)
		out = append(out, a)
		return err
	})
	return out, err
}

// ActiveAgents returns the team's active agents (the expert gate's
// candidates, and messaging's directory).
func (s *Store) ActiveAgents(ctx context.Context, teamID string) ([]agents.Agent, error) {
	return s.allAgents(ctx, teamID, agents.StatusActive)
}

// TeamAgents returns the team's agents that are not archived.
func (s *Store) TeamAgents(ctx context.Context, teamID string) ([]agents.Agent, error) {
	list, err := s.allAgents(ctx, teamID, "")
	if err != nil {
		return nil, err
	}
	out := list[:0]
	for _, a := range list {
		if a.Status != agents.StatusArchived {
			out = append(out, a)
		}
	}
	return out, nil
}
