package lambdafn

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/conclave-ai/conclave/shared/platform/awscalls"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/platform/tracing"
)

// Streamer is the handler of a function behind the streaming API (a REST
// API method with responseTransferMode STREAM): the runtime sends the
// response's JSON prelude, eight zero bytes and then the body as the
// function writes it. The body keeps running after the handler returns;
// the invocation ends when it is read to its end.
type Streamer func(ctx context.Context, ev events.APIGatewayProxyRequest) (*events.APIGatewayProxyStreamingResponse, error)

// counted logs the invocation's line, as Counted does, when its body ends
// (the stream's end is the invocation's).
//
// It is traced as Wire's handlers are (traced), from the REST event: the
// stream's spans are sent as its body ends, and its answer names the
// trace (X-Trace-Id).
func (st Streamer) counted(log *slog.Logger, name string, tp *tracing.Provider, flush func(context.Context)) Streamer {
	log = logctx.Wrap(log)
	return func(ctx context.Context, ev events.APIGatewayProxyRequest) (*events.APIGatewayProxyStreamingResponse, error) {
		ctx = tracing.WithProvider(ctx, tp)
		ctx, span := tracing.StartHTTP(ctx, name, ev.HTTPMethod+" "+ev.Resource, ev.Headers)
		calls := awscalls.FromContext(ctx)
		if calls == nil {
			ctx, calls = awscalls.NewContext(ctx)
		}
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			ctx = logctx.With(ctx, "lambda_request_id", lc.AwsRequestID)
		}
		start := time.Now()
		resp, err := st(ctx, ev)
		line := func(streamErr error) {
			attrs := []any{"duration_ms", time.Since(start).Milliseconds(), "streamed", true,
				"aws_calls", calls.Counts(), "aws_calls_total", calls.Total(), "aws_retries", calls.Retries()}
			if streamErr != nil {
				attrs = append(attrs, "error", streamErr.Error())
			}
			log.InfoContext(ctx, "invocation", attrs...)
			tracing.End(ctx, span, streamErr)
			flush(ctx)
		}
		if err != nil || resp == nil {
			line(err)
			return resp, err
		}
		if id := tracing.TraceID(ctx); id != "" {
			if resp.Headers == nil {
				resp.Headers = map[string]string{}
			}
			resp.Headers[tracing.TraceIDHeader] = id
			resp.Headers[tracing.ResponseHeader] = tracing.Traceparent(ctx)
		}
		resp.Body = &loggedBody{r: resp.Body, done: line}
		return resp, nil
	}
}

// loggedBody calls done once, when the body ends or is closed.
type loggedBody struct {
	r    io.Reader
	done func(error)
	over bool
}

func (b *loggedBody) Read(p []byte) (int, error) {
	if b.r == nil {
		b.finish(nil)
		return 0, io.EOF
	}
	n, err := b.r.Read(p)
	if err != nil {
		if err == io.EOF {
			b.finish(nil)
		} else {
			b.finish(err)
		}
	}
	return n, err
}

func (b *loggedBody) Close() error {
	b.finish(nil)
	if c, ok := b.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (b *loggedBody) finish(err error) {
	if !b.over {
		b.over = true
		b.done(err)
	}
}
