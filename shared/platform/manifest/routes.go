package manifest

import "sort"

// Routes returns every HTTP route with the function serving it, sorted by key.
func Routes() []RouteTarget { return routesOf(TriggerHTTP) }

// StreamRoutes returns the streaming API's routes (TriggerStream), sorted by
// key: its own paths, and HTTP API paths it serves again as a stream.
func StreamRoutes() []RouteTarget { return routesOf(TriggerStream) }

func routesOf(trigger Trigger) []RouteTarget {
	var out []RouteTarget
	for _, f := range Functions {
		if f.Trigger != trigger {
			continue
		}
		for _, r := range f.Routes {
			out = append(out, RouteTarget{Route: r, Function: f.Name, Public: f.Public})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Route.Key() < out[j].Route.Key() })
	return out
}

// RouteTarget pairs a route with its function.
type RouteTarget struct {
	Route    Route
	Function string
	// Public: the gateway runs no authorizer (Function.Public).
	Public bool
}
