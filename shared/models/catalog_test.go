package models_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/models"
)

// A stage offers its tiers' and its extra models through its provider
// (named or left empty) and the local stand-in; a model that is both a
// tier's and an extra one is listed once, as the tier's.
func TestCatalogOffersTheTiersAndTheExtraModels(t *testing.T) {
	c := models.Catalog{Provider: "bedrock", Tiers: map[string]string{"tier_1": "b.one-v1:0", "tier_0": "a.zero-v1:0"},
		Extra: []string{"c.extra-v1:0", "b.one-v1:0"}}
	var ids []string
	for _, o := range c.Offers() {
		ids = append(ids, o.ModelID)
	}
	assert.Equal(t, []string{"a.zero-v1:0", "b.one-v1:0", "c.extra-v1:0"}, ids)
	assert.Equal(t, "tier_1", *c.Offers()[1].Tier)
	assert.Nil(t, c.Offers()[2].Tier)

	for _, p := range []string{"", "bedrock", "local"} {
		assert.True(t, c.Offered(p, "a.zero-v1:0"), p)
		assert.True(t, c.Offered(p, "c.extra-v1:0"), p)
		assert.False(t, c.Offered(p, "d.other-v1:0"), p)
	}
	assert.False(t, c.Offered("openai", "a.zero-v1:0"), "a provider the stage does not serve its models with")
	assert.Empty(t, models.Catalog{Provider: "bedrock"}.Offers())
}
