// Package remote is the adapter of external A2A agents that are team
// members (docs/a2a.md, "Outbound"): it fetches and checks their agent
// cards (agents.Cards), answers chat turns, consultations and session
// stages addressed to them as a model does (models.Model, provider
// agents.ProviderA2A), and starts, checks and cancels a delegated task's
// remote task for the worker (worker.Remote), all with the official Go
// SDK's client (github.com/a2aproject/a2a-go/v2, JSON-RPC; the 0.3
// compatibility layer for agents that still speak it).
//
// Safety: every connection goes through a dialer that checks the address
// it uses against the stage's network policy (the MCP packs' rules:
// https to public addresses deployed, loopback only locally), no proxy,
// no redirects, no response read past MaxResponseBytes. What goes out is
// the message text alone (never the team's API key, its system prompt,
// roster or memories), with the agent's own credential as a bearer token.
// What comes back is another party's text: the worker and the prompts
// treat it as untrusted data (Untrusted).
package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/tracing/httptrace"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

// Limits of one remote call.
const (
	// MaxResponseBytes bounds what is read of one HTTP response (a card,
	// a task).
	MaxResponseBytes = 1 << 20
	// CardTimeout bounds one card fetch.
	CardTimeout = 10 * time.Second
	// PollInterval is how often a chat turn's call reads a remote task
	// that has not ended yet (within the turn's deadline; delegated tasks
	// wait in their workflow instead).
	PollInterval = 500 * time.Millisecond
	// MaxAnswerBytes bounds the remote text Conclave keeps of an answer.
	MaxAnswerBytes = 64 << 10
)

// AgentReader reads the agent a model request names.
type AgentReader interface {
	GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error)
}

// SecretReader reads a remote agent's credential (secretstore.Store).
type SecretReader interface {
	GetSecret(ctx context.Context, id string) (string, error)
}

// Client implements agents.Cards and models.Model for remote agents.
type Client struct {
	Policy  toolpacks.NetPolicy
	Agents  AgentReader
	Secrets SecretReader
}

var (
	_ agents.Cards = (*Client)(nil)
	_ models.Model = (*Client)(nil)
)

// ModelID is the model id a remote agent's answers are recorded under:
// it has no price here (the remote party bills its own work), so its
// calls count tokens (estimated from the text) and cost nothing.
const ModelID = "a2a-remote"

var errAddress = toolpacks.ErrAddress

// httpClient is a client under the policy with the credential, if any,
// as a bearer token. Its transport is the caller's to close.
func (c *Client) httpClient(credential string, timeout time.Duration) (*http.Client, *http.Transport) {
	tr := &http.Transport{Proxy: nil, DialContext: c.Policy.Dialer().DialContext, ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: 5 * time.Second, MaxIdleConns: 2}
	return &http.Client{
		Timeout:   timeout,
		Transport: httptrace.Transport(&bearer{base: tr, credential: credential}, "a2a"),
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("the A2A agent answered with a redirect; register its final URL")
		},
	}, tr
}

// bearer adds the credential and bounds every body.
type bearer struct {
	base       http.RoundTripper
	credential string
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.credential != "" {
		r.Header.Set("Authorization", "Bearer "+b.credential)
	}
	resp, err := b.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.LimitReader(resp.Body, MaxResponseBytes), resp.Body}
	return resp, nil
}

// cardURL is where the card is: the URL as given when it names a JSON
// document, else the well-known path under it.
func cardURL(raw string) string {
	if strings.HasSuffix(strings.ToLower(strings.SplitN(raw, "?", 2)[0]), ".json") {
		return raw
	}
	return strings.TrimRight(raw, "/") + "/.well-known/agent-card.json"
}

// Fetch implements agents.Cards: the card read (A2A 1.0, or 0.3 read
// through the compatibility layer) and checked: a name, a JSON-RPC
// interface of protocol 1.0 or 0.3 whose URL the policy allows.
func (c *Client) Fetch(ctx context.Context, raw, credential string) (agents.RemoteCard, error) {
	if err := c.Policy.CheckURL(raw); err != nil {
		return agents.RemoteCard{}, field(err, "a2a.card_url")
	}
	ctx, cancel := context.WithTimeout(ctx, CardTimeout)
	defer cancel()
	hc, tr := c.httpClient(credential, CardTimeout)
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cardURL(raw), nil)
	if err != nil {
		return agents.RemoteCard{}, apperr.Invalid("a2a.card_url", "a2a.card_url is not a URL")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return agents.RemoteCard{}, unreachable(raw, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return agents.RemoteCard{}, unreachable(raw, err)
	}
	if resp.StatusCode != http.StatusOK {
		return agents.RemoteCard{}, unreachable(raw, fmt.Errorf("the card answered HTTP %d", resp.StatusCode))
	}
	return c.parseCard(body, raw)
}

// scopesAsLists rewrites each security requirement's scopes from the
// ProtoJSON StringList form the A2A 1.0 specification's JSON gives
// ({"list": [...]}, or {} for none: what the official Python SDK serves)
// into the bare lists a2a-go v2.3.1 reads (a2aproject/a2a-go#430); a card
// without requirements, or already in lists, is returned as it is.
func scopesAsLists(body []byte) []byte {
	var card map[string]json.RawMessage
	if json.Unmarshal(body, &card) != nil || card["securityRequirements"] == nil {
		return body
	}
	var reqs []map[string]map[string]json.RawMessage
	if json.Unmarshal(card["securityRequirements"], &reqs) != nil {
		return body
	}
	for _, r := range reqs {
		for scheme, scopes := range r["schemes"] {
			var list struct {
				List []string `json:"list"`
			}
			if json.Unmarshal(scopes, &list) == nil {
				r["schemes"][scheme], _ = json.Marshal(append([]string{}, list.List...))
			}
		}
	}
	fixed, err := json.Marshal(reqs)
	if err != nil {
		return body
	}
	card["securityRequirements"] = fixed
	out, err := json.Marshal(card)
	if err != nil {
		return body
	}
	return out
}

// parseCard reads a card body and picks its interface.
func (c *Client) parseCard(body []byte, raw string) (agents.RemoteCard, error) {
	body = scopesAsLists(body)
	var card a2a.AgentCard
	if err := json.Unmarshal(body, &card); err != nil || len(card.SupportedInterfaces) == 0 {
		// A 0.3 card has url and preferredTransport instead.
		v0, err0 := a2av0.NewAgentCardParser()(body)
		if err0 != nil {
			return agents.RemoteCard{}, notCard(raw, "its body is not an agent card")
		}
		card = *v0
	}
	if strings.TrimSpace(card.Name) == "" {
		return agents.RemoteCard{}, notCard(raw, "the card has no name")
	}
	iface := pickInterface(card.SupportedInterfaces)
	if iface == nil {
		return agents.RemoteCard{}, notCard(raw, "the card offers no JSON-RPC interface of A2A 1.0 or 0.3")
	}
	if err := c.Policy.CheckURL(iface.URL); err != nil {
		return agents.RemoteCard{}, field(err, "a2a.card_url")
	}
	out := agents.RemoteCard{Name: card.Name, Description: card.Description, Version: card.Version,
		Endpoint: iface.URL, ProtocolVersion: string(iface.ProtocolVersion)}
	for _, s := range card.Skills {
		out.Skills = append(out.Skills, agents.RemoteSkill{ID: s.ID, Name: s.Name, Description: s.Description, Tags: s.Tags, Examples: s.Examples})
	}
	return out, nil
}

// pickInterface is the card's JSON-RPC interface of A2A 1.0, else 0.3.
func pickInterface(ifaces []*a2a.AgentInterface) *a2a.AgentInterface {
	var v0 *a2a.AgentInterface
	for _, i := range ifaces {
		if i == nil || i.ProtocolBinding != a2a.TransportProtocolJSONRPC {
			continue
		}
		switch {
		case strings.HasPrefix(string(i.ProtocolVersion), "1."):
			return i
		case strings.HasPrefix(string(i.ProtocolVersion), "0.3") && v0 == nil:
			v0 = i
		}
	}
	return v0
}

// field renames an EINVALID error's field (the policy names "url").
func field(err error, name string) error {
	var e *apperr.Error
	if errors.As(err, &e) && e.Code == apperr.EINVALID {
		return apperr.Invalid(name, "%s", strings.Replace(e.Message, "url", name, 1))
	}
	return err
}

func unreachable(raw string, err error) error {
	if errors.Is(err, errAddress) || strings.Contains(err.Error(), errAddress.Error()) {
		return apperr.Wrap(apperr.EREJECTED, err, "the A2A agent's address is outside what agents may reach").WithReason(toolpacks.ReasonURLRefused)
	}
	return apperr.Wrap(apperr.EUPSTREAM, err, "the agent card at %s could not be fetched", hostOf(raw)).WithReason("A2AAgentUnreachable")
}

func notCard(raw, why string) error {
	return apperr.New(apperr.EUPSTREAM, "the agent card at %s is not usable: %s", hostOf(raw), why).WithReason("A2ACardInvalid")
}

func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return "the given URL"
}
