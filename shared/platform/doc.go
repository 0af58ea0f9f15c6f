// Package platform is the first wing of shared/: what every function runs
// on, whatever it serves. Errors with codes (apperr), identifiers (ids),
// paging, rune-safe clipping (clip), a text's content words (words), the
// float32 kernel of the gate's example similarities (f32), the clock, log
// context (logctx), the environment contract (settings), the manifest of
// functions and routes, the Lambda bootstrap (lambdafn) and its AWS call
// count (awscalls) and tracing (tracing), the HTTP plumbing (httpapi,
// authctx, answerby), idempotent creates, event streams, JSON Schema
// checks, the poll and retry loops (backoff) and the queue consumers'
// retry and dead-lettering (consumers). It imports nothing of the module
// above it: every other wing may import it (shared/archtest holds the
// order).
package platform
