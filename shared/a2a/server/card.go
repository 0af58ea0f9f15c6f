package server

import (
	"context"
	"fmt"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// ProtocolVersion03 is the older protocol version the agent also speaks.
const ProtocolVersion03 a2a.ProtocolVersion = "0.3"

// SecurityScheme names the API key in the card: the key of any route,
// in the X-Api-Key header.
const SecurityScheme = "apiKey"

// The modes the team reads and answers: text, and JSON data parts (an
// approval's decision in, a task's structured output out).
var modes = []string{"text/plain", "application/json"}

// Card is the team's agent card at endpoint e (its URLs). The public one
// (no key needed) shows the skills marked public only; the extended one
// (GetExtendedAgentCard, with the key) every skill a message may reach, so
// every one but the internal_only ones. A skill's id is <agent>.<skill>,
// unique in the team. Where the stage has a streaming API, the card says
// streaming: true and lists the agent's endpoint there first (Interfaces).
func Card(t teams.Team, active []agents.Agent, e Endpoint, version string, extended bool) *a2a.AgentCard {
	card := &a2a.AgentCard{
		Name: t.Name,
		Description: fmt.Sprintf("%s, a team of AI agents on Conclave. A message is routed to the agent whose skills fit it "+
			"and answered as a task; the skills below are what the team offers.", t.Name),
		Version:             version,
		SupportedInterfaces: Interfaces(e),
		// Push notifications where the stage offers them (Service.PublicCard).
		Capabilities:       a2a.AgentCapabilities{ExtendedAgentCard: true, Streaming: e.StreamURL != ""},
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
				// A few of what users say to it, so a client's router
				// can route to it too; the rest stay the team's.
				Examples: slices.Clone(s.Examples[:min(len(s.Examples), CardExamples)]),
			})
		}
	}
	return card
}

// CardExamples is how many of a public skill's examples the agent card
// shows.
const CardExamples = 5

// Interfaces are the agent's JSON-RPC endpoints, each in A2A 1.0 and in
// 0.3 (a2a-go's 0.3 layer answers a request with no A2A-Version, or
// 0.x): the streaming API's first, where the stage has one, then the HTTP
// API's. Both answer every method. A client takes one interface for all
// its calls — a2a-sdk's the first JSON-RPC 1.0 one, a 0.3 client the
// card's url, which a2a-go's 0.3 card makes the first 0.3 one — so the
// streaming endpoint comes first: a client that streams reaches the API
// that streams. The HTTP API's stays listed for clients that choose it
// (its streaming methods answer the whole stream at once, cut at its 29
// seconds). An endpoint reached on the streaming API does not know the
// HTTP API's URL (e.BaseURL is empty there) and lists its own only.
func Interfaces(e Endpoint) []*a2a.AgentInterface {
	var urls []string
	for _, u := range []string{e.StreamURL, e.BaseURL} {
		if u != "" {
			urls = append(urls, u)
		}
	}
	var out []*a2a.AgentInterface
	for _, version := range []a2a.ProtocolVersion{a2a.Version, ProtocolVersion03} {
		for _, u := range urls {
			out = append(out, &a2a.AgentInterface{URL: u, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: version})
		}
	}
	return out
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
	c := Card(t, active, e, s.Version, extended)
	// Push notifications where the stage wires them (push.go).
	c.Capabilities.PushNotifications = s.pushEnabled()
	if s.NoTasks != "" {
		c.Description += " This stage takes no new messages for now (" + s.NoTasks + " is off): SendMessage answers UnsupportedOperation."
	}
	return c, nil
}
