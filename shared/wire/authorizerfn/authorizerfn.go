// Package authorizerfn wires the "authorizer" function: the team store and
// the API-key check, the identity store and the bearer-token verifier. It
// links DynamoDB only.
package authorizerfn

import (
	"net/http"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/identitystore"
	"github.com/conclave-ai/conclave/shared/store/teamstore"
	"github.com/conclave-ai/conclave/shared/team/authorizer"
	"github.com/conclave-ai/conclave/shared/team/identity"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	// The team store for the key check; the rate counter is generic
	// (the core), so the function links the teams domain only.
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	h := &authorizer.Handler{Teams: teams.NewService(teamstore.New(core.DB, core.Table)), Log: d.Log}
	h.Rate = authorizer.NewRateLimit(d.Config.TeamRateLimit, d.Config.UserRateLimit, core)
	// Issuers' keys are fetched under the network policy (the URL and
	// every connection's address) and cached for the warm function's life.
	policy := toolpacks.NetPolicy{LoopbackOnly: d.Config.MCPLoopbackOnly}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, DialContext: policy.Dialer().DialContext,
		TLSHandshakeTimeout: 3 * time.Second, ResponseHeaderTimeout: 3 * time.Second}}
	h.Tokens = &identity.Verifier{Pairs: identitystore.New(core.DB, core.Table), Keys: &identity.KeyCache{Client: client, CheckURL: policy.CheckURL}}
	return h.Event, nil
}
