package lambdafn

import (
	"context"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// AllowOrigins makes st answer browsers from origins (the stage's
// settings.EnvCORSOrigins) as the HTTP API's gateway answers them: a
// request whose Origin is listed gets it back in
// Access-Control-Allow-Origin, with the headers a browser app reads
// exposed. A streaming function needs it and an HTTP API function does
// not: the streaming API is a REST API whose proxy integration passes the
// function's headers untouched, so no gateway adds them (its preflights
// are its own, infra/stack/cors.go). An unlisted Origin is never echoed;
// every answer says Vary: Origin, since each depends on it. No origins:
// st unchanged.
func (st Streamer) AllowOrigins(origins []string) Streamer {
	if len(origins) == 0 {
		return st
	}
	expose := strings.Join(manifest.CORSExposeHeaders, ",")
	return func(ctx context.Context, ev events.APIGatewayProxyRequest) (*events.APIGatewayProxyStreamingResponse, error) {
		resp, err := st(ctx, ev)
		if err != nil || resp == nil {
			return resp, err
		}
		if resp.Headers == nil {
			resp.Headers = map[string]string{}
		}
		resp.Headers["Vary"] = varyOrigin(resp.Headers["Vary"])
		if origin := requestOrigin(ev); origin != "" && slices.Contains(origins, origin) {
			resp.Headers["Access-Control-Allow-Origin"] = origin
			resp.Headers["Access-Control-Expose-Headers"] = expose
		}
		return resp, nil
	}
}

// requestOrigin is the request's one Origin header, whatever its case
// (clients over HTTP/2 send it lower-case); two of them name none.
func requestOrigin(ev events.APIGatewayProxyRequest) string {
	var found []string
	for k, vs := range ev.MultiValueHeaders {
		if strings.EqualFold(k, "Origin") {
			found = append(found, vs...)
		}
	}
	if len(found) == 0 {
		for k, v := range ev.Headers {
			if strings.EqualFold(k, "Origin") {
				found = append(found, v)
			}
		}
	}
	if len(found) != 1 {
		return ""
	}
	return found[0]
}

// varyOrigin adds Origin to a Vary header's value.
func varyOrigin(vary string) string {
	for _, v := range strings.Split(vary, ",") {
		if strings.EqualFold(strings.TrimSpace(v), "Origin") {
			return vary
		}
	}
	if strings.TrimSpace(vary) == "" {
		return "Origin"
	}
	return vary + ", Origin"
}
