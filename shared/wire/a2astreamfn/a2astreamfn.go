// Package a2astreamfn wires the "a2a-stream" function: the team's A2A
// agent (shared/wire/a2afn, shared/a2a/server; docs/a2a.md) on the streaming
// API, where SendStreamingMessage and SubscribeToTask answer as
// Server-Sent Events while the task runs. Its one route is public at the
// gateway: the key is checked here as the a2a function checks it, so every
// error is a JSON-RPC error object.
package a2astreamfn

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/a2afn"
)

// Build wires the function: the a2a function's agent, serving the
// streaming API; its handler is a lambdafn.Streamer that names the
// stage's listed origins to browsers (AllowOrigins).
func Build(d lambdafn.Deps) (any, error) {
	h := a2afn.New(d)
	h.Streaming = true
	return lambdafn.Streamer(h.ServeStream).AllowOrigins(d.Config.CORSOrigins), nil
}
