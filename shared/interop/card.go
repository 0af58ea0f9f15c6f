package interop

import (
	"context"
	"fmt"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/teams"
)

// ProtocolVersion03 is the older protocol version the agent also speaks.
const ProtocolVersion03 a2a.ProtocolVersion = "0.3"

// SecurityScheme names the API key in the card: the key of any route,
// in the X-Api-Key header.
const SecurityScheme = "apiKey"

// The modes the team reads and answers: text, and JSON data parts (an
// approval's decision in, a task's structured output out).
var modes = []string{"text/plain", "application/json"}

// Card is the team's agent card. The public one (no key needed) shows the
// skills marked public only; the extended one (GetExtendedAgentCard, with
// the key) every skill a message may reach, so every one but the
// internal_only ones. A skill's id is <agent>.<skill>, unique in the team.
func Card(t teams.Team, active []agents.Agent, baseURL, version string, extended bool) *a2a.AgentCard {
	card := &a2a.AgentCard{
		Name: t.Name,
		Description: fmt.Sprintf("%s, a team of AI agents on Conclave. A message is routed to the agent whose skills fit it "+
			"and answered as a task; the skills below are what the team offers.", t.Name),
		Version: version,
		// JSON-RPC at the agent's URL, in 1.0 and in 0.3 (a2a-go's 0.3
		// layer answers a request with no A2A-Version, or 0.x).
		SupportedInterfaces: []*a2a.AgentInterface{
			a2a.NewAgentInterface(baseURL, a2a.TransportProtocolJSONRPC),
			{URL: baseURL, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: ProtocolVersion03},
		},
		// Streaming comes with the streaming API (issue 29); push
		// notifications where the stage offers them (Service.PublicCard).
		Capabilities:       a2a.AgentCapabilities{ExtendedAgentCard: true},
		DefaultInputModes:  slices.Clone(modes),
		DefaultOutputModes: slices.Clone(modes),
		SecuritySchemes: a2a.NamedSecuritySchemes{SecurityScheme: a2a.APIKeySecurityScheme{
			Location: a2a.APIKeySecuritySchemeLocationHeader, Name: "X-Api-Key",
			Description: "A Conclave API key of the team (POST /v1/keys); the same key as every route of the API.",
		}},
		SecurityRequirements: a2a.SecurityRequirementsOptions{{SecurityScheme: {}}},
		Skills:               []a2a.AgentSkill{},
	}
	for _, ag := range active {
		for _, s := range ag.Skills {
			if s.InternalOnly || (!extended && !s.Public) {
				continue
			}
			tags := append(slices.Clone(s.Domains), s.Keywords...)
			if tags == nil {
				tags = []string{}
			}
			card.Skills = append(card.Skills, a2a.AgentSkill{
				ID: ag.Slug + "." + s.Name, Name: s.Name, Description: s.Description, Tags: tags,
			})
		}
	}
	return card
}

// PublicCard is the card of the endpoint in ctx (With), for anyone.
func (s *Service) PublicCard(ctx context.Context) (*a2a.AgentCard, error) {
	return s.card(ctx, false)
}

// GetExtendedAgentCard implements a2asrv.RequestHandler: the card with
// every skill a message may reach.
func (s *Service) GetExtendedAgentCard(ctx context.Context, _ *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	return s.card(ctx, true)
}

func (s *Service) card(ctx context.Context, extended bool) (*a2a.AgentCard, error) {
	e, ok := endpoint(ctx)
	if !ok {
		return nil, a2a.ErrUnauthenticated
	}
	t, err := s.Registry.GetTeam(ctx, e.TeamID)
	if err != nil {
		return nil, protocolError(err)
	}
	active, err := s.Registry.Agents(ctx, e.TeamID)
	if err != nil {
		return nil, protocolError(err)
	}
	c := Card(t, active, e.BaseURL, s.Version, extended)
	// Push notifications where the stage wires them (push.go).
	c.Capabilities.PushNotifications = s.pushEnabled()
	return c, nil
}
