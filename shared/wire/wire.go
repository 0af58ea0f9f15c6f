// Package wire is the top layer: the functions' wiring. Each
// shared/wire/<stem>fn builds one function (its stem is the function's
// manifest name without hyphens: result-poster → resultposterfn), the
// <domain>wiring packages build what several functions share, and
// providers builds the model port from the environment contract.
//
// This package is the registry of every function's builder, keyed by its
// manifest name. Deployed functions never import it: each
// functions/<name>/main.go calls its own builder (shared/wire/<stem>fn),
// so its binary links only the clients that function is granted. The
// builders live here rather than in the mains because a main cannot be
// imported: the local cloud's edge and the tests import the registry to
// run every function in one process, with the same wiring as in AWS.
package wire

import (
	"fmt"

	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/a2afn"
	"github.com/conclave-ai/conclave/shared/wire/a2apushfn"
	"github.com/conclave-ai/conclave/shared/wire/a2astreamfn"
	"github.com/conclave-ai/conclave/shared/wire/activityrecorderfn"
	"github.com/conclave-ai/conclave/shared/wire/adminfn"
	"github.com/conclave-ai/conclave/shared/wire/agentsfn"
	"github.com/conclave-ai/conclave/shared/wire/authorizerfn"
	"github.com/conclave-ai/conclave/shared/wire/classifierfitterfn"
	"github.com/conclave-ai/conclave/shared/wire/consolefn"
	"github.com/conclave-ai/conclave/shared/wire/consultationsfn"
	"github.com/conclave-ai/conclave/shared/wire/conversationsfn"
	"github.com/conclave-ai/conclave/shared/wire/discoveryfn"
	"github.com/conclave-ai/conclave/shared/wire/expertgatefn"
	"github.com/conclave-ai/conclave/shared/wire/healthfn"
	"github.com/conclave-ai/conclave/shared/wire/memoriesfn"
	"github.com/conclave-ai/conclave/shared/wire/memoryinvalidatorfn"
	"github.com/conclave-ai/conclave/shared/wire/messagefanoutfn"
	"github.com/conclave-ai/conclave/shared/wire/messagesfn"
	"github.com/conclave-ai/conclave/shared/wire/plansfn"
	"github.com/conclave-ai/conclave/shared/wire/planstepsfn"
	"github.com/conclave-ai/conclave/shared/wire/reportfinalizerfn"
	"github.com/conclave-ai/conclave/shared/wire/reportsfn"
	"github.com/conclave-ai/conclave/shared/wire/resultposterfn"
	"github.com/conclave-ai/conclave/shared/wire/routingevaluatorfn"
	"github.com/conclave-ai/conclave/shared/wire/routingfn"
	"github.com/conclave-ai/conclave/shared/wire/sessionsfn"
	"github.com/conclave-ai/conclave/shared/wire/sessionstepsfn"
	"github.com/conclave-ai/conclave/shared/wire/streamsfn"
	"github.com/conclave-ai/conclave/shared/wire/tasklifecyclefn"
	"github.com/conclave-ai/conclave/shared/wire/tasksfn"
	"github.com/conclave-ai/conclave/shared/wire/tasksweeperfn"
	"github.com/conclave-ai/conclave/shared/wire/taskworkerfn"
	"github.com/conclave-ai/conclave/shared/wire/teamfn"
)

// Builders maps each manifest function to its builder.
var Builders = map[string]lambdafn.Build{
	"authorizer":         authorizerfn.Build,
	"health":             healthfn.Build,
	"agents":             agentsfn.Build,
	"team":               teamfn.Build,
	"admin":              adminfn.Build,
	"tasks":              tasksfn.Build,
	"task-lifecycle":     tasklifecyclefn.Build,
	"task-worker":        taskworkerfn.Build,
	"task-sweeper":       tasksweeperfn.Build,
	"conversations":      conversationsfn.Build,
	"expert-gate":        expertgatefn.Build,
	"discovery":          discoveryfn.Build,
	"routing":            routingfn.Build,
	"messages":           messagesfn.Build,
	"memories":           memoriesfn.Build,
	"message-fanout":     messagefanoutfn.Build,
	"memory-invalidator": memoryinvalidatorfn.Build,
	"classifier-fitter":  classifierfitterfn.Build,
	"routing-evaluator":  routingevaluatorfn.Build,
	"activity-recorder":  activityrecorderfn.Build,
	"sessions":           sessionsfn.Build,
	"session-steps":      sessionstepsfn.Build,
	"plans":              plansfn.Build,
	"plan-steps":         planstepsfn.Build,
	"reports":            reportsfn.Build,
	"consultations":      consultationsfn.Build,
	"report-finalizer":   reportfinalizerfn.Build,
	"result-poster":      resultposterfn.Build,
	"a2a-push":           a2apushfn.Build,
	"a2a":                a2afn.Build,
	"console":            consolefn.Build,
	"streams":            streamsfn.Build,
	"a2a-stream":         a2astreamfn.Build,
}

// Routers maps each HTTP function to the builder of its router, so tests
// can compare its route keys with the manifest.
var Routers = map[string]func(lambdafn.Deps) (*httpapi.Router, error){
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
