package cloud

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// EnvCORSOrigins names the origins the local APIs answer, comma-separated;
// unset, DefaultCORSOrigins (a Vite dev server's); empty, none.
const EnvCORSOrigins = "CONCLAVE_CORS_ORIGINS"

// DefaultCORSOrigins are the local cloud's origins when EnvCORSOrigins is
// unset: a browser app served by a dev server on its usual port.
const DefaultCORSOrigins = "http://localhost:5173,http://127.0.0.1:5173"

// CORS answers browsers as a stage's gateways do for the origins it lists
// (-c cors.origins; infra/stack/cors.go): a preflight (OPTIONS with Origin
// and Access-Control-Request-Method) is answered 204 before any route or
// authorizer, with the allow headers for a listed origin and without them
// for another (the browser then refuses the call); any other request from
// a listed origin carries Access-Control-Allow-Origin. No origins: no CORS,
// every request passes untouched.
type CORS struct {
	Origins []string
}

// ConsoleOrigins are the origins of the console the edge serves on the
// HTTP API's port (docs/console.md): the streaming API, another origin,
// must allow them for the page to stream. When EnvCORSOrigins is unset
// they join the defaults (ListConsoleOrigins); a developer who sets it
// lists what they want.
func ConsoleOrigins(apiPort int) []string {
	return []string{fmt.Sprintf("http://127.0.0.1:%d", apiPort), fmt.Sprintf("http://localhost:%d", apiPort)}
}

// ListConsoleOrigins makes the console's origins part of the local
// origins, unless EnvCORSOrigins was set: the edge calls it before
// anything reads LocalCORS.
func ListConsoleOrigins(apiPort int) {
	if _, set := os.LookupEnv(EnvCORSOrigins); !set {
		_ = os.Setenv(EnvCORSOrigins, strings.Join(append(settings.ParseList(DefaultCORSOrigins), ConsoleOrigins(apiPort)...), ","))
	}
}

// LocalCORS reads EnvCORSOrigins.
func LocalCORS() CORS {
	v, ok := os.LookupEnv(EnvCORSOrigins)
	if !ok {
		v = DefaultCORSOrigins
	}
	return CORS{Origins: settings.ParseList(v)}
}

// Wrap answers next's preflights and marks its answers to listed origins.
func (c CORS) Wrap(next http.Handler) http.Handler {
	if len(c.Origins) == 0 {
		return next
	}
	methods := strings.Join(append(slices.Clone(manifest.CORSMethods), http.MethodOptions), ",")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		listed := origin != "" && slices.Contains(c.Origins, origin)
		h := w.Header()
		if r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Origin")
			if listed {
				h.Set("Access-Control-Allow-Origin", origin)
				h.Set("Access-Control-Allow-Methods", methods)
				h.Set("Access-Control-Allow-Headers", strings.Join(manifest.CORSHeaders, ","))
				h.Set("Access-Control-Max-Age", strconv.Itoa(manifest.CORSMaxAgeSeconds))
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if listed {
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", strings.Join(manifest.CORSExposeHeaders, ","))
		}
		next.ServeHTTP(w, r)
	})
}
