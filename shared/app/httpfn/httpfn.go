// Package httpfn is the shape every HTTP function's wiring shares: the
// table (every HTTP function reads it, if only for idempotency keys), a
// router, and the function's own routes on it.
package httpfn

import (
	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/manifest"
)

// The routes a feature flag gates (manifest.RouteFlags) are disabled on
// the router while the flag is off in d's config.

// Register adds one function's routes to rt, building the services they
// need from d and store.
type Register func(d lambdafn.Deps, store *dynamo.Store, rt *httpapi.Router)

// New returns the function's builder and the builder of its router (tests
// compare the router's route keys with the manifest).
func New(register Register) (lambdafn.Build, func(lambdafn.Deps) *httpapi.Router) {
	router := func(d lambdafn.Deps) *httpapi.Router {
		store := dynamo.FromConfig(d.AWS, d.Config.TableName)
		rt := httpapi.NewRouter(d.Log, store)
		rt.Bodies = api.BodyRoutes()
		register(d, store, rt)
		for _, key := range rt.RouteKeys() {
			if flag, gated := manifest.RouteFlags[key]; gated && !d.Config.Flags.On(flag) {
				rt.Disable(key, flag)
			}
		}
		return rt
	}
	return func(d lambdafn.Deps) (any, error) { return router(d).Serve, nil }, router
}
