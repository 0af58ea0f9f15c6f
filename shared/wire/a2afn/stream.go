package a2afn

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
)

// ServeStream is the handler of the a2a-stream function: the JSON-RPC
// endpoint (RouteRPC) on the streaming API, a REST API whose integration
// streams. The REST event is read as the HTTP API's (httpapi.RESTEvent)
// and checked as Serve checks it — the key, the agent, the body — so every
// failure before the answer is the same JSON-RPC error with its status.
// The request then goes to a2a-go's transport as on the HTTP API, which
// writes to the response's body while it runs: a streaming method's
// Server-Sent Events reach the client as they are written, any other
// method's answer is one JSON body. The body runs on the invocation's
// context, which lives until the body has been read.
func (h *Handler) ServeStream(ctx context.Context, ev events.APIGatewayProxyRequest) (res *events.APIGatewayProxyStreamingResponse, err error) {
	v2 := httpapi.RESTEvent(ev)
	reqID := v2.RequestContext.RequestID
	ctx = logctx.With(ctx, "request_id", reqID, "route", v2.RouteKey)
	defer func() {
		if r := recover(); r != nil {
			h.Log.ErrorContext(ctx, "a2a panic", "panic", fmt.Sprint(r))
			res, err = whole(h.failure(ctx, reqID, apperr.New(apperr.EINTERNAL, "internal error"))), nil
		}
	}()
	if v2.RouteKey != RouteRPC {
		return whole(h.failure(ctx, reqID, apperr.NotFound("route", v2.RouteKey))), nil
	}
	ctx, body, err := h.open(ctx, v2)
	if err != nil {
		return whole(h.failure(ctx, reqID, err)), nil
	}
	w := newStreamWriter(ctx)
	go func() {
		defer w.close()
		defer func() {
			if r := recover(); r != nil {
				h.Log.ErrorContext(ctx, "a2a panic", "panic", fmt.Sprint(r))
				if !w.started() {
					write(w, h.failure(ctx, reqID, apperr.New(apperr.EINTERNAL, "internal error")))
				}
			}
		}()
		h.serveRPC(ctx, v2, body, w)
	}()
	status, headers, err := w.prelude(ctx)
	if err != nil {
		return whole(h.failure(ctx, reqID, apperr.Wrap(apperr.EINTERNAL, err, "no answer"))), nil
	}
	return &events.APIGatewayProxyStreamingResponse{StatusCode: status, Headers: headers, Body: w.pr}, nil
}

// whole is res answered on the streaming API in one piece.
func whole(res events.APIGatewayV2HTTPResponse) *events.APIGatewayProxyStreamingResponse {
	return &events.APIGatewayProxyStreamingResponse{StatusCode: res.StatusCode, Headers: res.Headers, Body: strings.NewReader(res.Body)}
}

// streamWriter is the http.ResponseWriter a2a-go's transport writes to on
// the streaming API: the status and headers are the response's prelude,
// fixed by the first WriteHeader, Write or Flush (the Lambda runtime sends
// them before the body); what is written then goes through a pipe to the
// runtime, which sends it on as it reads it. The pipe holds nothing, so a
// flush has nothing to do. The writes end with the invocation's context:
// a client gone away leaves the body unread, and the transport stops.
type streamWriter struct {
	header http.Header
	status int
	once   sync.Once
	ready  chan struct{}
	pr     *io.PipeReader
	pw     *io.PipeWriter
	stop   func() bool
}

func newStreamWriter(ctx context.Context) *streamWriter {
	pr, pw := io.Pipe()
	w := &streamWriter{header: http.Header{}, ready: make(chan struct{}), pr: pr, pw: pw}
	w.stop = context.AfterFunc(ctx, func() { _ = pw.CloseWithError(ctx.Err()) })
	return w
}

// Header implements http.ResponseWriter.
func (w *streamWriter) Header() http.Header { return w.header }

// WriteHeader implements http.ResponseWriter: the first call fixes the
// prelude.
func (w *streamWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.status = code
		close(w.ready)
	})
}

// Write implements http.ResponseWriter; it returns once the runtime has
// read p.
func (w *streamWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

// Flush implements http.Flusher (a2a-go's SSE writer needs one).
func (w *streamWriter) Flush() { w.WriteHeader(http.StatusOK) }

func (w *streamWriter) started() bool {
	select {
	case <-w.ready:
		return true
	default:
		return false
	}
}

// close ends the body (an answer that wrote nothing is an empty 200).
func (w *streamWriter) close() {
	w.WriteHeader(http.StatusOK)
	_ = w.pw.Close()
	w.stop()
}

// prelude waits for the status and headers. Hop-by-hop headers are the
// gateway's, not the function's.
func (w *streamWriter) prelude(ctx context.Context) (int, map[string]string, error) {
	select {
	case <-w.ready:
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	}
	headers := map[string]string{"Content-Type": "application/json"}
	for k := range w.header {
		if k != "Connection" {
			headers[k] = w.header.Get(k)
		}
	}
	return w.status, headers, nil
}
