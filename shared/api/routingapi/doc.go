// Package routingapi holds the HTTP handlers of the routing decision log and the team's
// routing calibration, registered by the routing function. The routes are split by domain so that a function links only
// the handlers (and so the domains) it serves; the shared plumbing (the
// OpenAPI document, list responses, the wait bound) stays in shared/api.
package routingapi
