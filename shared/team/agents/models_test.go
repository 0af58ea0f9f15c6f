package agents_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
)

// stage offers the routing tiers' models and one extra model on Bedrock,
// as the agents function builds its catalog from its settings.
var stage = models.Catalog{Provider: "bedrock",
	Tiers: map[string]string{"tier_0": "amazon.nova-micro-v1:0", "tier_1": "anthropic.claude-3-5-haiku-20241022-v1:0", "tier_2": "anthropic.claude-3-5-sonnet-20240620-v1:0"},
	Extra: []string{"amazon.nova-pro-v1:0"}}

// notOffered is a well-formed model id the stage does not offer (its grants
// do not name it: Bedrock would refuse every reply).
const notOffered = "anthropic.claude-3-opus-20240229-v1:0"

// offeringService is the agents service of a stage offering stage's
// models, over the in-memory store holding team t1.
func offeringService(t *testing.T) (*agents.Service, *memstore.Store) {
	t.Helper()
	store := memstore.New()
	require.NoError(t, store.CreateTeam(context.Background(), teams.Team{ID: "t1", Name: "T"}, teams.APIKey{ID: "k1"}, "h1"))
	svc := agents.NewService(store)
	svc.Models = stage
	return svc, store
}

func input(slug string, m *agents.Model) agents.CreateInput {
	return agents.CreateInput{Slug: slug, Name: slug, Model: m, Skills: []agents.Skill{{Name: "testing", Description: "tests"}}}
}

// requireInvalidModelID holds err to a 400 naming model.id.
func requireInvalidModelID(t *testing.T, err error) {
	t.Helper()
	var ae *apperr.Error
	require.True(t, errors.As(err, &ae), "an application error: %v", err)
	assert.Equal(t, apperr.EINVALID, ae.Code)
	assert.Equal(t, "model.id", ae.Field)
	assert.Contains(t, ae.Message, "GET /v1/models")
}

// A model the stage offers is accepted on create: a tier's, an extra one,
// by the stage's provider named or not, and by the local provider that
// stands in for it; a model naming no id is the provider's default. The
// next model, one the stage does not offer, is 400 naming model.id, and
// nothing is stored.
func TestCreateAcceptsOnlyTheModelsTheStageOffers(t *testing.T) {
	ctx := context.Background()
	svc, store := offeringService(t)
	for slug, m := range map[string]*agents.Model{
		"tiered":   {ID: "amazon.nova-micro-v1:0"},
		"extra":    {Provider: "bedrock", ID: "amazon.nova-pro-v1:0"},
		"scripted": {Provider: "local", ID: "anthropic.claude-3-5-sonnet-20240620-v1:0", Script: "tools:2"},
		"defaults": {Provider: "bedrock"},
		"plain":    nil,
	} {
		_, err := svc.Create(ctx, "t1", input(slug, m))
		require.NoError(t, err, slug)
	}
	for slug, m := range map[string]*agents.Model{
		"ungranted":  {Provider: "bedrock", ID: notOffered},
		"default":    {ID: notOffered},
		"local":      {Provider: "local", ID: notOffered},
		"other-prov": {Provider: "openai", ID: "amazon.nova-pro-v1:0"},
	} {
		_, err := svc.Create(ctx, "t1", input(slug, m))
		requireInvalidModelID(t, err)
		_, err = store.GetAgent(ctx, "t1", slug)
		assert.True(t, apperr.Code(err) == apperr.ENOTFOUND, "%s: nothing stored on refusal", slug)
	}
	// Without a catalog (tools writing agents directly) every model passes.
	_, err := agents.NewService(store).Create(ctx, "t1", input("anything", &agents.Model{ID: notOffered}))
	require.NoError(t, err)
}

// An update that gives a model the stage does not offer is 400 naming
// model.id and changes nothing; one it offers is stored. An agent whose
// model the stage no longer offers keeps working: an update that leaves
// its model as it is goes through.
func TestUpdateRefusesAModelTheStageDoesNotOffer(t *testing.T) {
	ctx := context.Background()
	svc, store := offeringService(t)
	_, err := svc.Create(ctx, "t1", input("luke", &agents.Model{ID: "amazon.nova-micro-v1:0"}))
	require.NoError(t, err)

	_, err = svc.Update(ctx, "t1", "luke", agents.UpdateInput{Model: &agents.Model{Provider: "bedrock", ID: notOffered}})
	requireInvalidModelID(t, err)
	stored, err := store.GetAgent(ctx, "t1", "luke")
	require.NoError(t, err)
	assert.Equal(t, 1, stored.Version, "nothing written")
	assert.Equal(t, "amazon.nova-micro-v1:0", stored.Model.ID)

	a, err := svc.Update(ctx, "t1", "luke", agents.UpdateInput{Model: &agents.Model{ID: "amazon.nova-pro-v1:0"}})
	require.NoError(t, err)
	assert.Equal(t, "amazon.nova-pro-v1:0", a.Model.ID)

	// GIVEN an agent stored before the stage stopped offering its model
	_, err = agents.NewService(store).Create(ctx, "t1", input("old", &agents.Model{Provider: "bedrock", ID: notOffered}))
	require.NoError(t, err)
	// WHEN it is renamed, or PATCHed with the model it has
	name := "Old Timer"
	a, err = svc.Update(ctx, "t1", "old", agents.UpdateInput{Name: &name})
	require.NoError(t, err)
	assert.Equal(t, notOffered, a.Model.ID)
	a, err = svc.Update(ctx, "t1", "old", agents.UpdateInput{Model: &agents.Model{Provider: "bedrock", ID: notOffered}, Tagline: &name})
	// THEN it keeps its model
	require.NoError(t, err)
	assert.Equal(t, notOffered, a.Model.ID)
	assert.True(t, svc.Misconfigured(a))
}

// ?misconfigured=true lists the agents whose model the stage does not
// offer, and only those; the status filter and paging still apply.
func TestListMisconfiguredKeepsTheAgentsTheStageNoLongerServes(t *testing.T) {
	ctx := context.Background()
	svc, store := offeringService(t)
	direct := agents.NewService(store) // as a stage that offered them wrote them
	for slug, m := range map[string]*agents.Model{
		"ava":   {ID: "amazon.nova-micro-v1:0"},
		"bea":   {Provider: "bedrock", ID: notOffered},
		"cleo":  nil,
		"dana":  {Provider: "local", ID: "anthropic.claude-3-haiku-20240307-v1:0"},
		"ezra":  {Provider: "openai", ID: "gpt-4o-mini"},
		"fritz": {Provider: "local", Script: "fail"},
	} {
		_, err := direct.Create(ctx, "t1", input(slug, m))
		require.NoError(t, err, slug)
	}
	list, next, err := svc.ListMisconfigured(ctx, "t1", agents.Filter{}, paging.Page{})
	require.NoError(t, err)
	assert.Empty(t, next)
	var slugs []string
	for _, a := range list {
		slugs = append(slugs, a.Slug)
	}
	assert.Equal(t, []string{"bea", "dana", "ezra"}, slugs)

	// A page is read, then narrowed: it may hold none and go on.
	list, next, err = svc.ListMisconfigured(ctx, "t1", agents.Filter{}, paging.Page{Limit: 1})
	require.NoError(t, err)
	assert.Empty(t, list, "ava's page: she is served")
	require.NotEmpty(t, next)
	list, _, err = svc.ListMisconfigured(ctx, "t1", agents.Filter{}, paging.Page{Limit: 1, Token: next})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "bea", list[0].Slug)

	_, err = svc.SetStatus(ctx, "t1", "bea", agents.StatusPaused)
	require.NoError(t, err)
	list, _, err = svc.ListMisconfigured(ctx, "t1", agents.Filter{Status: agents.StatusPaused}, paging.Page{})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "bea", list[0].Slug)

	_, _, err = svc.ListMisconfigured(ctx, "t1", agents.Filter{Status: "gone"}, paging.Page{})
	assert.True(t, apperr.Code(err) == apperr.EINVALID)
}
