// Package teamapi holds the HTTP handlers of the team, its API keys and its activity log, registered by
// the team function. The routes are split by domain so that a function links only
// the handlers (and so the domains) it serves; the shared plumbing (the
// OpenAPI document, list responses, the wait bound) stays in shared/api.
package teamapi
