// Package archtest holds tests of the module's architecture rather than of
// its behaviour: that the domain packages under shared/ link no AWS service
// client (architecture decision 7), so a function's binary carries only the
// clients its adapters need; and that the code a function runs logs only
// with a context, so every line carries the ids shared/platform/logctx puts there.
// It has no code of its own.
package archtest
