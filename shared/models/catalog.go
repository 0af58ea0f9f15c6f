package models

import (
	"slices"
	"sort"
)

// Offer is one model a stage offers its agents (GET /v1/models).
type Offer struct {
	// Provider serves the model: the stage's default provider
	// (MODEL_PROVIDER), which an agent naming no provider gets.
	Provider string `json:"provider"`
	ModelID  string `json:"model_id"`
	// Tier is the routing tier whose model it is (tier_0…), nil for an
	// extra model (EXTRA_MODELS).
	Tier *string `json:"tier"`
	// InputPer1K and OutputPer1K are its price in US dollars per 1,000
	// tokens (Pricing); nil when Pricing does not list the model (the
	// CostGuard then reserves at the highest listed price).
	InputPer1K  *float64 `json:"input_usd_per_1k_tokens"`
	OutputPer1K *float64 `json:"output_usd_per_1k_tokens"`
	// Streaming: a streamed chat turn (docs/streaming.md) gets the
	// model's reply as it is written, not whole at the end.
	Streaming bool `json:"streaming"`
}

// streams are the providers whose adapter streams a reply
// (Request.OnDelta): Bedrock's ConverseStream, granted on the same models
// as Converse; the OpenAI-compatible endpoint's server-sent chunks; the
// local model's pieces.
var streams = map[string]bool{"bedrock": true, "openai": true, "local": true}

// Catalog is what a stage offers its agents: its routing tiers' models and
// its extra models, served by its default provider. These are exactly the
// models the stage's Bedrock grants name (infra/stack), so an agent
// naming another would be refused by Bedrock on every reply.
type Catalog struct {
	// Provider is the stage's default provider (MODEL_PROVIDER).
	Provider string
	// Tiers maps each routing tier to its model (MODEL_TIERS, with the
	// routing package's defaults filled in by the wiring).
	Tiers map[string]string
	// Extra are EXTRA_MODELS.
	Extra []string
}

// Offers lists the stage's models: the tiers' in tier order, then the
// extra models not already a tier's, in the order the stage lists them.
func (c Catalog) Offers() []Offer {
	tiers := make([]string, 0, len(c.Tiers))
	for t := range c.Tiers {
		tiers = append(tiers, t)
	}
	sort.Strings(tiers)
	out := []Offer{}
	seen := map[string]bool{}
	add := func(id, tier string) {
		if id == "" || seen[id] {
			return
		}
		seen[id] = true
		o := Offer{Provider: c.Provider, ModelID: id, Streaming: streams[c.Provider]}
		if tier != "" {
			o.Tier = &tier
		}
		if p, ok := Pricing[id]; ok {
			input, output := p.InputPerMTok/1000, p.OutputPerMTok/1000
			o.InputPer1K, o.OutputPer1K = &input, &output
		}
		out = append(out, o)
	}
	for _, t := range tiers {
		add(c.Tiers[t], t)
	}
	for _, id := range c.Extra {
		add(id, "")
	}
	return out
}

// Offered reports whether the stage offers provider's model id. The
// empty provider is the stage's default; the local provider (the
// deterministic model of make run and the tests, which answers as the
// model it is asked for, at that model's price) stands in for it and
// offers the same models; any other provider offers none here.
func (c Catalog) Offered(provider, modelID string) bool {
	if provider != "" && provider != c.Provider && provider != "local" {
		return false
	}
	for _, id := range c.Tiers {
		if id == modelID {
			return true
		}
	}
	return slices.Contains(c.Extra, modelID)
}
