package remote_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/a2a/remote"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

// cardServer serves body at the well-known path and records the
// Authorization header it was sent.
func cardServer(t *testing.T, body string, auth *string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth != nil {
			*auth = r.Header.Get("Authorization")
		}
		switch r.URL.Path {
		case "/.well-known/agent-card.json", "/custom/card.json":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(strings.ReplaceAll(body, "BASE", "http://"+r.Host)))
		case "/moved/.well-known/agent-card.json":
			http.Redirect(w, r, "/.well-known/agent-card.json", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

const card10 = `{"name":"Tax Desk","description":"Taxes.","version":"3",
 "supportedInterfaces":[{"url":"BASE/grpc","protocolBinding":"GRPC","protocolVersion":"1.0"},
  {"url":"BASE/old","protocolBinding":"JSONRPC","protocolVersion":"0.3"},
  {"url":"BASE/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
 "capabilities":{},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
 "skills":[{"id":"vat","name":"VAT","description":"VAT returns","tags":["vat","tax"],"examples":["file my VAT"]}]}`

const card03 = `{"name":"Old Desk","description":"Old.","version":"1","protocolVersion":"0.3.0","url":"BASE/v03","preferredTransport":"JSONRPC",
 "capabilities":{},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
 "skills":[{"id":"audit","name":"Audit","description":"Audits books","tags":["audit"]}]}`

var local = remote.Client{Policy: toolpacks.NetPolicy{LoopbackOnly: true}}

func TestACardIsReadWithItsJSONRPCInterface(t *testing.T) {
	var auth string
	srv := cardServer(t, card10, &auth)
	c, err := local.Fetch(context.Background(), srv.URL, "tok")
	require.NoError(t, err)
	assert.Equal(t, "Bearer tok", auth, "the agent's own credential, as a bearer token")
	assert.Equal(t, srv.URL+"/rpc", c.Endpoint, "JSON-RPC of A2A 1.0 before 0.3, never gRPC")
	assert.Equal(t, "1.0", c.ProtocolVersion)
	assert.Equal(t, "Tax Desk", c.Name)
	assert.Equal(t, []agents.RemoteSkill{{ID: "vat", Name: "VAT", Description: "VAT returns", Tags: []string{"vat", "tax"}, Examples: []string{"file my VAT"}}}, c.Skills)

	c, err = local.Fetch(context.Background(), srv.URL+"/custom/card.json", "")
	require.NoError(t, err, "a URL naming a JSON document is fetched as it is")
	assert.Equal(t, "", auth, "no credential, no header")
	assert.Equal(t, "Tax Desk", c.Name)
}

// The official Python SDK serves security requirements in the form of
// the specification's JSON ("bearer": {} or {"list": [...]}); a2a-go
// v2.3.1 reads only bare lists, so the card is read either way.
func TestACardsSecurityRequirementsAreReadInEitherForm(t *testing.T) {
	for _, form := range []string{`{}`, `{"list":["read"]}`, `[]`, `["read"]`} {
		body := strings.Replace(card10, `"capabilities":{}`, `"capabilities":{},"securitySchemes":{"bearer":{"httpAuthSecurityScheme":{"scheme":"bearer"}}},"securityRequirements":[{"schemes":{"bearer":`+form+`}}]`, 1)
		srv := cardServer(t, body, nil)
		c, err := local.Fetch(context.Background(), srv.URL, "")
		require.NoError(t, err, form)
		assert.Equal(t, "Tax Desk", c.Name, form)
	}
}

func TestAZeroThreeCardIsReadThroughTheCompatibilityLayer(t *testing.T) {
	srv := cardServer(t, card03, nil)
	c, err := local.Fetch(context.Background(), srv.URL, "")
	require.NoError(t, err)
	assert.Equal(t, srv.URL+"/v03", c.Endpoint)
	assert.True(t, strings.HasPrefix(c.ProtocolVersion, "0.3"), c.ProtocolVersion)
	require.Len(t, c.Skills, 1)
	assert.Equal(t, "audit", c.Skills[0].ID)
}

func TestCardsThatCannotBeUsedAreRefusedClearly(t *testing.T) {
	for name, c := range map[string]struct {
		body, path, reason, code string
	}{
		"not a card":      {body: `[1,2]`, reason: "A2ACardInvalid", code: apperr.EUPSTREAM},
		"no name":         {body: strings.Replace(card10, `"Tax Desk"`, `""`, 1), reason: "A2ACardInvalid", code: apperr.EUPSTREAM},
		"only gRPC":       {body: `{"name":"G","supportedInterfaces":[{"url":"BASE/g","protocolBinding":"GRPC","protocolVersion":"1.0"}]}`, reason: "A2ACardInvalid", code: apperr.EUPSTREAM},
		"not found":       {body: card10, path: "/nothing/here.json", reason: "A2AAgentUnreachable", code: apperr.EUPSTREAM},
		"a redirect":      {body: card10, path: "/moved", reason: "A2AAgentUnreachable", code: apperr.EUPSTREAM},
		"endpoint far":    {body: strings.ReplaceAll(card10, "BASE", "https://agent.example"), reason: toolpacks.ReasonURLRefused, code: apperr.EREJECTED},
		"not loopback":    {path: "https://agent.example", reason: toolpacks.ReasonURLRefused, code: apperr.EREJECTED},
		"not http at all": {path: "ftp://127.0.0.1/card", code: apperr.EINVALID},
	} {
		t.Run(name, func(t *testing.T) {
			srv := cardServer(t, c.body, nil)
			u := srv.URL + c.path
			if strings.Contains(c.path, "://") {
				u = c.path
			}
			_, err := local.Fetch(context.Background(), u, "")
			require.Error(t, err)
			assert.True(t, apperr.Is(err, c.code), "%v", err)
			var e *apperr.Error
			if c.reason != "" && assert.ErrorAs(t, err, &e) {
				assert.Equal(t, c.reason, e.Reason, err.Error())
			}
		})
	}
}

// A deployed stage's policy reaches no loopback card.
func TestADeployedStageReachesNoLoopbackCard(t *testing.T) {
	srv := cardServer(t, card10, nil)
	deployed := remote.Client{}
	_, err := deployed.Fetch(context.Background(), srv.URL, "")
	assert.True(t, apperr.Is(err, apperr.EINVALID) || apperr.Is(err, apperr.EREJECTED), "%v", err)
}

type oneAgent agents.Agent

func (o oneAgent) GetAgent(context.Context, string, string) (agents.Agent, error) {
	return agents.Agent(o), nil
}

// A model request for an agent that is not an A2A agent is refused
// before anything goes out.
func TestConverseNeedsAnA2AAgent(t *testing.T) {
	c := remote.Client{Policy: toolpacks.NetPolicy{LoopbackOnly: true}, Agents: oneAgent{Slug: "kyra"}}
	_, err := c.Converse(context.Background(), models.Request{Metadata: map[string]string{models.MetadataTeamID: "t", models.MetadataAgent: "kyra"},
		Messages: []models.Message{{Role: "user", Content: "hi"}}})
	assert.True(t, apperr.Is(err, apperr.EINVALID), "%v", err)
}
