// Package conversationsapi holds the HTTP handlers of conversations, chat turns and handoffs, registered by
// the conversations function. The routes are split by domain so that a function links only
// the handlers (and so the domains) it serves; the shared plumbing (the
// OpenAPI document, list responses, the wait bound) stays in shared/api.
package conversationsapi
