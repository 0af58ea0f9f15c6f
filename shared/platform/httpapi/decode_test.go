package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
)

// nested is a request type with every kind of field the handlers decode.
type nested struct {
	Name     string         `json:"name"`
	Count    *int           `json:"count"`
	Ratio    float64        `json:"ratio"`
	On       *bool          `json:"on"`
	Tags     []string       `json:"tags"`
	Inner    *innerThing    `json:"inner"`
	Items    []innerThing   `json:"items"`
	Metadata map[string]any `json:"metadata"`
	Due      *time.Time     `json:"due"`
}

type innerThing struct {
	Level int8 `json:"level"`
}

func decodeBody(body string) (nested, error) {
	var v nested
	r := &httpapi.Request{Event: &events.APIGatewayV2HTTPRequest{Body: body}}
	return v, r.Decode(&v)
}

// What encoding/json quietly accepts and the document forbids is refused,
// naming the field and the JSON type, never a Go type.
func TestDecodeIsAsStrictAsTheDocument(t *testing.T) {
	cases := []struct{ name, body, field, message string }{
		{"top-level null", `null`, "body", "body must be a JSON object"},
		{"top-level array", `[{"name":"a"}]`, "body", "body must be a JSON object"},
		{"top-level string", `"name"`, "body", "body must be a JSON object"},
		{"top-level number", ` 42 `, "body", "body must be a JSON object"},
		{"null field", `{"name":null}`, "name", "name must not be null"},
		{"null pointer field", `{"count":null}`, "count", "count must not be null"},
		{"null array", `{"tags":null}`, "tags", "tags must not be null"},
		{"null in array", `{"tags":["a",null]}`, "tags[1]", "tags[1] must not be null"},
		{"other case", `{"NAME":"a"}`, "NAME", `unknown field "NAME"`},
		{"nested unknown", `{"inner":{"lvl":1}}`, "inner.lvl", `unknown field "inner.lvl"`},
		{"string for integer", `{"count":"3"}`, "count", "count must be an integer"},
		{"fraction for integer", `{"count":1.5}`, "count", "count must be an integer (without fraction or exponent) in range"},
		{"integer overflow", `{"inner":{"level":300}}`, "inner.level", "inner.level must be an integer (without fraction or exponent) in range"},
		{"object for string", `{"name":{"first":"a"}}`, "name", "name must be a string"},
		{"array for object", `{"inner":[1]}`, "inner", "inner must be an object"},
		{"number for boolean", `{"on":1}`, "on", "on must be a boolean"},
		{"string for array", `{"tags":"a,b"}`, "tags", "tags must be an array"},
		{"item of wrong type", `{"items":[{"level":"x"}]}`, "items[0].level", "items[0].level must be an integer"},
		{"string for number", `{"ratio":"0.5"}`, "ratio", "ratio must be a number"},
		{"number too small to store", `{"ratio":1.1125369292536007e-308}`, "ratio", "ratio must be a number in range"},
		{"number too large to store", `{"ratio":-1e200}`, "ratio", "ratio must be a number in range"},
		{"metadata number too small to store", `{"metadata":{"a":[1,{"b":1e-131}]}}`, "metadata.a[1].b", "metadata.a[1].b must be a number in range"},
		{"metadata number too large to store", `{"metadata":{"a":1e126}}`, "metadata.a", "metadata.a must be a number in range"},
		{"bad time", `{"due":"tomorrow"}`, "due", "due must be an RFC 3339 date-time"},
		{"number for time", `{"due":5}`, "due", "due must be a string"},
		{"trailing data", `{"name":"a"} {}`, "body", "body must hold exactly one JSON object"},
		{"syntax", `{"name":`, "body", "body is not valid JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := decodeBody(c.body)
			require.Error(t, err)
			e, ok := asAppErr(err)
			require.True(t, ok, err.Error())
			assert.Equal(t, "invalid_request", e.Code)
			assert.Equal(t, c.field, e.Field)
			assert.True(t, strings.HasPrefix(e.Message, c.message), e.Message)
			assert.NotContains(t, e.Message, "struct")
			assert.NotContains(t, e.Message, "int8")
			assert.NotContains(t, e.Message, "Go ")
		})
	}
}

func TestDecodeAcceptsWhatTheDocumentAllows(t *testing.T) {
	v, err := decodeBody(`{"name":"a","count":3,"ratio":1e-1,"on":false,"tags":["x"],"inner":{"level":-5},
		"items":[],"metadata":{"any":null,"n":[1,{"k":"v"}],"small":-1e-130,"large":9.99e125,"zero":-0.0},"due":"2026-11-01T00:00:00Z"}`)
	require.NoError(t, err)
	for _, body := range []string{`{"ratio":1e-130}`, `{"ratio":-9.99e125}`, `{"ratio":0e-400}`} {
		_, err := decodeBody(body)
		require.NoError(t, err, body)
	}
	assert.Equal(t, "a", v.Name)
	assert.Equal(t, 3, *v.Count)
	assert.Equal(t, int8(-5), v.Inner.Level)
	assert.Nil(t, v.Metadata["any"])
	_, err = decodeBody(" {} \n")
	require.NoError(t, err)
}

// A route the document gives no body refuses one before its handler runs;
// a route with an optional body refuses `null`.
func TestRoutesWithoutABodyRefuseOne(t *testing.T) {
	calls := 0
	rt := httpapi.NewRouter(slog.New(slog.NewTextHandler(io.Discard, nil)))
	rt.Bodies = map[string]bool{"POST /v1/things/{id}/pause": false, "POST /v1/things/{id}/close": true}
	handler := func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in struct {
			Reason string `json:"reason"`
		}
		if err := r.DecodeOptional(&in); err != nil {
			return httpapi.Response{}, err
		}
		calls++
		return httpapi.OK(map[string]string{"reason": in.Reason}), nil
	}
	rt.Handle("POST /v1/things/{id}/pause", handler)
	rt.Handle("POST /v1/things/{id}/close", handler)
	send := func(route, body string, b64 bool) events.APIGatewayV2HTTPResponse {
		resp, _ := rt.Serve(context.Background(), events.APIGatewayV2HTTPRequest{RouteKey: route, Body: body, IsBase64Encoded: b64,
			RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "req-1", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"},
				Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"team_id": "team_a"}}}})
		return resp
	}
	for _, body := range []string{`{}`, `garbage`, `null`, `{"reason":"x"}`} {
		resp := send("POST /v1/things/{id}/pause", body, false)
		assert.Equal(t, 400, resp.StatusCode, body)
		assert.Equal(t, "body", errorOf(t, resp).Error.Field)
	}
	assert.Equal(t, 400, send("POST /v1/things/{id}/pause", "AAEC", true).StatusCode)
	assert.Equal(t, 0, calls, "a refused body changes nothing")
	assert.Equal(t, 200, send("POST /v1/things/{id}/pause", "", false).StatusCode)
	assert.Equal(t, 200, send("POST /v1/things/{id}/pause", " \n", false).StatusCode)
	assert.Equal(t, 2, calls)

	for _, body := range []string{`null`, `[]`, `"x"`, `{"reason":null}`} {
		assert.Equal(t, 400, send("POST /v1/things/{id}/close", body, false).StatusCode, body)
	}
	assert.Equal(t, 200, send("POST /v1/things/{id}/close", ``, false).StatusCode)
	assert.Equal(t, 200, send("POST /v1/things/{id}/close", `{"reason":"done"}`, false).StatusCode)
}

func TestPageRefusesLimitsOutsideTheDocumentedRange(t *testing.T) {
	for _, q := range []map[string]string{{"limit": "0"}, {"limit": "-1"}, {"limit": "101"}, {"limit": ""}, {"limit": "ten"}} {
		r := &httpapi.Request{Event: &events.APIGatewayV2HTTPRequest{QueryStringParameters: q}}
		_, err := r.Page()
		e, ok := asAppErr(err)
		require.True(t, ok, "%v", q)
		assert.Equal(t, "limit", e.Field, "%v", q)
	}
	r := &httpapi.Request{Event: &events.APIGatewayV2HTTPRequest{QueryStringParameters: map[string]string{"limit": "1"}}}
	p, err := r.Page()
	require.NoError(t, err)
	assert.Equal(t, 1, p.Limit)
	r = &httpapi.Request{Event: &events.APIGatewayV2HTTPRequest{}}
	p, err = r.Page()
	require.NoError(t, err)
	assert.Equal(t, 25, p.Limit)
}

func asAppErr(err error) (*apperr.Error, bool) { return apperr.As(err) }

// nobody is a field whose null is a value (httpapi.Nullable).
type nobody string

func (*nobody) NullIsAValue() {}

// A Nullable field takes null (and a value of its own); every other field
// next to it still refuses null.
func TestANullableFieldTakesNull(t *testing.T) {
	var v struct {
		Who   *nobody `json:"who"`
		Count *int    `json:"count"`
	}
	decode := func(body string) error {
		r := &httpapi.Request{Event: &events.APIGatewayV2HTTPRequest{Body: body}}
		return r.Decode(&v)
	}
	require.NoError(t, decode(`{"who":null}`))
	assert.Nil(t, v.Who)
	require.NoError(t, decode(`{"who":"ann"}`))
	require.NotNil(t, v.Who)
	assert.Equal(t, nobody("ann"), *v.Who)
	err := decode(`{"who":null,"count":null}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "count must not be null")
	assert.Error(t, decode(`{"who":3}`), "still a string")
}
