// Package httpfn is the shape every HTTP function's wiring shares: the
// table (every HTTP function reads it), a router, and the function's own
// routes on it.
package httpfn

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// The routes a feature flag gates (manifest.RouteFlags) are disabled on
// the router while the flag is off in d's config.

// Register adds one function's routes to rt, building the services they
// need from d and store.
type Register func(d lambdafn.Deps, store *dynamo.Store, rt *httpapi.Router)

// Fallible is a Register whose wiring can fail on a setting (the model
// provider the function's model port is built from): its error fails the
// function's cold start.
type Fallible func(d lambdafn.Deps, store *dynamo.Store, rt *httpapi.Router) error

// Router builds a function's router from d, as its builder does (tests
// compare the router's route keys with the manifest).
type Router func(d lambdafn.Deps) (*httpapi.Router, error)

// New returns the function's builder and the builder of its router. Its
// POSTs with an Idempotency-Key are replayed, with their records in the
// table.
func New(register Register) (lambdafn.Build, Router) {
	return NewFallible(func(d lambdafn.Deps, store *dynamo.Store, rt *httpapi.Router) error {
		register(d, store, rt)
		return nil
	})
}

// NewFallible is New for a function whose wiring can fail.
func NewFallible(register Fallible) (lambdafn.Build, Router) {
	router := func(d lambdafn.Deps) (*httpapi.Router, error) {
		store := dynamo.FromConfig(d.AWS, d.Config.TableName)
		rt := httpapi.NewRouter(d.Log).WithIdempotency(store)
		rt.Bodies = api.BodyRoutes()
		if err := register(d, store, rt); err != nil {
			return nil, err
		}
		for _, key := range rt.RouteKeys() {
			if flag, gated := manifest.RouteFlags[key]; gated && !d.Config.Flags.On(flag) {
				rt.Disable(key, flag)
			}
		}
		return rt, nil
	}
	return func(d lambdafn.Deps) (any, error) {
		rt, err := router(d)
		if err != nil {
			return nil, err
		}
		return rt.Serve, nil
	}, router
}

// NewReadOnly is New for a function that serves only GET routes: it keeps
// no idempotency records, so its code writes nothing to the table for
// them and its grants need no write (New's code links the records'
// writes, whichever routes a function has). A route of another method
// fails the build: it would run without idempotency.
func NewReadOnly(register Register) (lambdafn.Build, Router) {
	router := func(d lambdafn.Deps) *httpapi.Router {
		store := dynamo.FromConfig(d.AWS, d.Config.TableName)
		rt := httpapi.NewRouter(d.Log)
		rt.Bodies = api.BodyRoutes()
		register(d, store, rt)
		return rt
	}
	build := func(d lambdafn.Deps) (any, error) {
		rt := router(d)
		if err := ReadOnly(rt); err != nil {
			return nil, err
		}
		return rt.Serve, nil
	}
	return build, func(d lambdafn.Deps) (*httpapi.Router, error) { return router(d), nil }
}

// ReadOnly returns an error naming a route of rt that is not a GET.
func ReadOnly(rt *httpapi.Router) error {
	for _, k := range rt.RouteKeys() {
		if !strings.HasPrefix(k, http.MethodGet+" ") {
			return fmt.Errorf("route %s on a read-only router (wire the function with httpfn.New)", k)
		}
	}
	return nil
}
