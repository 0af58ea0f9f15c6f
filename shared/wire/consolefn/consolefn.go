// Package consolefn wires the "console" function: the console's bundle
// (shared/api/consoleapi) read once at the cold start, and its config
// from the stage's settings. It links no AWS client and has no grant.
package consolefn

import (
	"net/http"

	"github.com/conclave-ai/conclave/shared/api/consoleapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
)

// Build wires the function.
func Build(d lambdafn.Deps) (any, error) {
	dir, err := consoleapi.Dir()
	if err != nil {
		return nil, err
	}
	h, err := consoleapi.Load(dir, Config(d))
	if err != nil {
		return nil, err
	}
	// The provider's token endpoint, read at the first request, so that
	// the page's policy lets it redeem its code there.
	return h.WithDiscovery(&http.Client{Timeout: consoleapi.DiscoverTimeout}, d.Log).Serve, nil
}

// Config is what the page is told: where the streaming API is, and the
// provider it signs people in with when the stage names one.
func Config(d lambdafn.Deps) consoleapi.Config {
	cfg := consoleapi.Config{StreamURL: d.Config.StreamURL}
	if d.Config.ConsoleIssuer != "" && d.Config.ConsoleClientID != "" {
		cfg.OIDC = &consoleapi.OIDC{Issuer: d.Config.ConsoleIssuer, ClientID: d.Config.ConsoleClientID}
	}
	return cfg
}
