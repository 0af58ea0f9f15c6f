// Package api is the HTTP layer over the domain wings: the OpenAPI
// document every route is checked against (openapi.yaml, embedded), what
// the route packages share (listings, long-poll waits, the tool views),
// and one package per HTTP function holding its handlers, named by the
// function's stem (shared/api/<stem>api: the tasks function registers
// tasksapi). The plumbing below it (routing by route key, strict decoding,
// the error shape, idempotent replays) is shared/platform/httpapi.
package api
