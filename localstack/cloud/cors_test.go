package cloud_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/localstack/cloud"
)

// The edge answers a preflight before the API (no route, no authorizer):
// with the allow headers for a listed origin, without them for another;
// an actual request from a listed origin carries its origin back, one from
// another origin or none nothing; no origins, no CORS.
func TestCORSAnswersPreflightsForListedOriginsOnly(t *testing.T) {
	reached := 0
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		w.WriteHeader(http.StatusUnauthorized)
	})
	h := cloud.CORS{Origins: []string{"http://localhost:5173", "https://chat.example.com"}}.Wrap(api)
	do := func(method, origin, requestMethod string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/v1/conversations", nil)
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if requestMethod != "" {
			r.Header.Set("Access-Control-Request-Method", requestMethod)
			r.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}

	w := do(http.MethodOptions, "https://chat.example.com", "POST")
	assert.Equal(t, http.StatusNoContent, w.Code)
	assert.Equal(t, "https://chat.example.com", w.Header().Get("Access-Control-Allow-Origin"))
	assert.Contains(t, w.Header().Get("Access-Control-Allow-Methods"), "POST")
	assert.Equal(t, "Content-Type,Authorization,X-Api-Key,Idempotency-Key,X-Conclave-User,Last-Event-ID,traceparent", w.Header().Get("Access-Control-Allow-Headers"))
	assert.Equal(t, "7200", w.Header().Get("Access-Control-Max-Age"))
	assert.Empty(t, w.Header().Get("Access-Control-Allow-Credentials"))
	assert.Zero(t, reached, "a preflight never reaches the authorizer")

	w = do(http.MethodOptions, "https://evil.example.com", "POST")
	assert.Equal(t, http.StatusNoContent, w.Code)
	for k := range w.Header() {
		assert.NotContains(t, k, "Access-Control-Allow", "an unlisted origin is told nothing")
	}
	assert.Zero(t, reached)

	w = do(http.MethodGet, "http://localhost:5173", "")
	assert.Equal(t, http.StatusUnauthorized, w.Code, "the API answers as it would")
	assert.Equal(t, "http://localhost:5173", w.Header().Get("Access-Control-Allow-Origin"))
	assert.Equal(t, "Retry-After,X-Request-Id,X-Trace-Id,traceresponse", w.Header().Get("Access-Control-Expose-Headers"))
	assert.Equal(t, 1, reached)

	w = do(http.MethodGet, "http://localhost:5174", "")
	assert.Empty(t, w.Header().Get("Access-Control-Allow-Origin"))
	w = do(http.MethodOptions, "", "")
	assert.Equal(t, http.StatusUnauthorized, w.Code, "an OPTIONS that is no preflight goes to the API")

	none := cloud.CORS{}.Wrap(api)
	r := httptest.NewRequest(http.MethodOptions, "/v1/conversations", nil)
	r.Header.Set("Origin", "http://localhost:5173")
	r.Header.Set("Access-Control-Request-Method", "GET")
	rec := httptest.NewRecorder()
	none.ServeHTTP(rec, r)
	assert.Equal(t, http.StatusUnauthorized, rec.Code, "no origins: no CORS")
	assert.Empty(t, rec.Header().Get("Access-Control-Allow-Origin"))
}

// Unset, the local origins are a dev server's on localhost; set, the
// variable's; empty, none.
func TestLocalCORSOrigins(t *testing.T) {
	t.Setenv(cloud.EnvCORSOrigins, "http://localhost:3000, https://a.example.com")
	assert.Equal(t, []string{"http://localhost:3000", "https://a.example.com"}, cloud.LocalCORS().Origins)
	t.Setenv(cloud.EnvCORSOrigins, "")
	assert.Empty(t, cloud.LocalCORS().Origins)
}
