// Package app is the registry of every function's builder, keyed by its
// manifest name. Deployed functions never import it: each
// functions/<name>/main.go calls its own builder (shared/app/<name>fn), so
// its binary links only the clients that function is granted. The local
// cloud's edge and the tests import the registry to run every function in
// one process, with the same wiring as in AWS.
package app

import (
	"fmt"

	"github.com/conclave-ai/conclave/shared/app/a2afn"
	"github.com/conclave-ai/conclave/shared/app/a2apushfn"
	"github.com/conclave-ai/conclave/shared/app/a2astreamfn"
	"github.com/conclave-ai/conclave/shared/app/adminfn"
	"github.com/conclave-ai/conclave/shared/app/agentsfn"
	"github.com/conclave-ai/conclave/shared/app/authorizerfn"
	"github.com/conclave-ai/conclave/shared/app/consultationsfn"
	"github.com/conclave-ai/conclave/shared/app/conversationsfn"
	"github.com/conclave-ai/conclave/shared/app/discoveryfn"
	"github.com/conclave-ai/conclave/shared/app/expertgatefn"
	"github.com/conclave-ai/conclave/shared/app/fanoutfn"
	"github.com/conclave-ai/conclave/shared/app/finalizerfn"
	"github.com/conclave-ai/conclave/shared/app/healthfn"
	"github.com/conclave-ai/conclave/shared/app/invalidatorfn"
	"github.com/conclave-ai/conclave/shared/app/lifecyclefn"
	"github.com/conclave-ai/conclave/shared/app/memoriesfn"
	"github.com/conclave-ai/conclave/shared/app/messagesfn"
	"github.com/conclave-ai/conclave/shared/app/plansfn"
	"github.com/conclave-ai/conclave/shared/app/planstepsfn"
	"github.com/conclave-ai/conclave/shared/app/posterfn"
	"github.com/conclave-ai/conclave/shared/app/recorderfn"
	"github.com/conclave-ai/conclave/shared/app/reportsfn"
	"github.com/conclave-ai/conclave/shared/app/routingfn"
	"github.com/conclave-ai/conclave/shared/app/sessionsfn"
	"github.com/conclave-ai/conclave/shared/app/sessionstepsfn"
	"github.com/conclave-ai/conclave/shared/app/streamsfn"
	"github.com/conclave-ai/conclave/shared/app/sweeperfn"
	"github.com/conclave-ai/conclave/shared/app/tasksfn"
	"github.com/conclave-ai/conclave/shared/app/teamfn"
	"github.com/conclave-ai/conclave/shared/app/workerfn"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

// Builders maps each manifest function to its builder.
var Builders = map[string]lambdafn.Build{
	"authorizer":         authorizerfn.Build,
	"health":             healthfn.Build,
	"agents":             agentsfn.Build,
	"team":               teamfn.Build,
	"admin":              adminfn.Build,
	"tasks":              tasksfn.Build,
	"task-lifecycle":     lifecyclefn.Build,
	"task-worker":        workerfn.Build,
	"task-sweeper":       sweeperfn.Build,
	"conversations":      conversationsfn.Build,
	"expert-gate":        expertgatefn.Build,
	"discovery":          discoveryfn.Build,
	"routing":            routingfn.Build,
	"messages":           messagesfn.Build,
	"memories":           memoriesfn.Build,
	"message-fanout":     fanoutfn.Build,
	"memory-invalidator": invalidatorfn.Build,
	"activity-recorder":  recorderfn.Build,
	"sessions":           sessionsfn.Build,
	"session-steps":      sessionstepsfn.Build,
	"plans":              plansfn.Build,
	"plan-steps":         planstepsfn.Build,
	"reports":            reportsfn.Build,
	"consultations":      consultationsfn.Build,
	"report-finalizer":   finalizerfn.Build,
	"result-poster":      posterfn.Build,
	"a2a-push":           a2apushfn.Build,
	"a2a":                a2afn.Build,
	"streams":            streamsfn.Build,
	"a2a-stream":         a2astreamfn.Build,
}

// Routers maps each HTTP function to the builder of its router, so tests
// can compare its route keys with the manifest.
var Routers = map[string]func(lambdafn.Deps) *httpapi.Router{
	"health":        healthfn.Router,
	"agents":        agentsfn.Router,
	"team":          teamfn.Router,
	"tasks":         tasksfn.Router,
	"conversations": conversationsfn.Router,
	"discovery":     discoveryfn.Router,
	"routing":       routingfn.Router,
	"messages":      messagesfn.Router,
	"memories":      memoriesfn.Router,
	"sessions":      sessionsfn.Router,
	"plans":         plansfn.Router,
	"reports":       reportsfn.Router,
	"consultations": consultationsfn.Router,
}

// Handler builds the handler of the manifest function name with d (whose
// Name and logger are set to the function's), wired as lambdafn.Main wires
// it: its AWS calls counted, one log line per invocation.
func Handler(name string, d lambdafn.Deps) (any, error) {
	build, ok := Builders[name]
	if !ok {
		return nil, fmt.Errorf("no handler for function %q", name)
	}
	d.Name, d.Log = name, d.Log.With("function", name)
	return lambdafn.Wire(build, d)
}
