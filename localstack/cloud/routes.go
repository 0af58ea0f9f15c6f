package cloud

import (
	"sort"
	"strings"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// route is a compiled manifest route.
type route struct {
	method   string
	parts    []string
	key      string
	function string
	// public: no authorizer (manifest.Function.Public).
	public bool
}

// compileRoutes compiles an API's routes, the most specific first: API
// Gateway picks a literal segment over a {param} ("GET
// /v1/agents/recommend" before "GET /v1/agents/{slug}").
func compileRoutes(rts []manifest.RouteTarget) []route {
	var routes []route
	for _, rt := range rts {
		routes = append(routes, route{method: rt.Route.Method, parts: strings.Split(strings.Trim(rt.Route.Path, "/"), "/"), key: rt.Route.Key(), function: rt.Function, public: rt.Public})
	}
	sort.SliceStable(routes, func(i, j int) bool { return strings.Count(routes[i].key, "{") < strings.Count(routes[j].key, "{") })
	return routes
}

// matchRoute is the route a request goes to, with its path parameters; nil
// when none matches.
func matchRoute(routes []route, method, path string) (*route, map[string]string) {
	for i := range routes {
		if p, ok := routes[i].match(method, path); ok {
			return &routes[i], p
		}
	}
	return nil, nil
}

func (rt route) match(method, path string) (map[string]string, bool) {
	if method != rt.method {
		return nil, false
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) != len(rt.parts) {
		return nil, false
	}
	params := map[string]string{}
	for i, p := range rt.parts {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			if parts[i] == "" {
				return nil, false
			}
			// The segment of the decoded path, as it is: API Gateway
			// decodes once (see APIHandler), so "a%25" reaches the
			// function as "a%" and is refused there in the error shape.
			params[p[1:len(p)-1]] = parts[i]
			continue
		}
		if p != parts[i] {
			return nil, false
		}
	}
	return params, true
}
