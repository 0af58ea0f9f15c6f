// Package sessionsapi holds the HTTP handlers of collaboration sessions, registered by
// the sessions function. The routes are split by domain so that a function links only
// the handlers (and so the domains) it serves; the shared plumbing (the
// OpenAPI document, list responses, the wait bound) stays in shared/api.
package sessionsapi
