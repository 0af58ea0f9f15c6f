// Package reportsapi holds the HTTP handlers of report templates and requests, registered by
// the reports function. The routes are split by domain so that a function links only
// the handlers (and so the domains) it serves; the shared plumbing (the
// OpenAPI document, list responses, the wait bound) stays in shared/api.
package reportsapi
