package httpapi_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
)

// The one wait rule at its boundaries: digits only, no sign, no leading
// zero, 0 to the route's maximum; every refusal is EINVALID naming wait.
func TestParseWait(t *testing.T) {
	const max = 25
	for _, c := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"25", 25, true},
		{"26", 0, false}, {"05", 0, false}, {"00", 0, false}, {"+1", 0, false}, {"-1", 0, false}, {"-0", 0, false},
		{"", 0, false}, {"1e3", 0, false}, {"1.0", 0, false}, {" 1", 0, false}, {"1 ", 0, false}, {"0x1", 0, false},
		{"١", 0, false}, {"２", 0, false}, // Arabic-Indic and full-width digits are not ASCII digits
		{"99999999999999999999999999", 0, false},
	} {
		n, err := httpapi.ParseWait(c.in, max)
		if !c.ok {
			var e *apperr.Error
			require.True(t, errors.As(err, &e), "%q: %v", c.in, err)
			assert.Equal(t, apperr.EINVALID, e.Code, "%q", c.in)
			assert.Equal(t, "wait", e.Field, "%q", c.in)
			assert.Contains(t, e.Message, strconv.Itoa(max), "%q: the message gives the route's maximum", c.in)
			continue
		}
		require.NoError(t, err, "%q", c.in)
		assert.Equal(t, c.want, n, "%q", c.in)
	}
}

// Through a route: absent is no wait, a value is seconds, an empty wait= is
// the standard 400 naming the field.
func TestRequestWaitThroughARoute(t *testing.T) {
	rt := httpapi.NewRouter(slog.New(slog.NewTextHandler(io.Discard, nil)))
	rt.Handle("GET /v1/things/{id}", func(_ context.Context, r *httpapi.Request) (httpapi.Response, error) {
		w, err := r.Wait(20)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(map[string]time.Duration{"wait": w}), nil
	})
	get := func(q map[string]string) events.APIGatewayV2HTTPResponse {
		resp, err := rt.Serve(context.Background(), events.APIGatewayV2HTTPRequest{RouteKey: "GET /v1/things/{id}",
			QueryStringParameters: q,
			RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "req-1",
				Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"team_id": "team_a"}}}})
		require.NoError(t, err)
		return resp
	}
	assert.JSONEq(t, `{"wait":0}`, get(nil).Body)
	assert.JSONEq(t, `{"wait":20000000000}`, get(map[string]string{"wait": "20"}).Body)
	for _, v := range []string{"", "21", "05"} {
		resp := get(map[string]string{"wait": v})
		require.Equal(t, 400, resp.StatusCode, "wait=%q", v)
		b := errorOf(t, resp)
		assert.Equal(t, apperr.EINVALID, b.Error.Code)
		assert.Equal(t, "wait", b.Error.Field)
	}
}
