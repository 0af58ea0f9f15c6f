package manifest

import "slices"

// GrantPutSpans sends spans to X-Ray's OTLP endpoint: every function
// exports its own (shared/platform/tracing's exporter, an HTTP POST signed
// with the function's role for service "xray", not an SDK operation). X-Ray
// has no resource-level permissions for it, so the CDK app grants it on
// "*".
const GrantPutSpans Grant = "xray:PutSpans"

// GrantDescribeExecution reads an execution's status: a start whose name
// is taken (another trace's input) is the running one's, or the caller's
// error (shared/aws/executions).
const GrantDescribeExecution Grant = "states:DescribeExecution"

// TracingGrants are what every function is granted because lambdafn sets
// up its tracer, whatever else it does (as every function declares the
// Tracing variables). infra/grants still holds them to the code: a
// function whose main does not reach the exporter fails there.
var TracingGrants = []Grant{GrantPutSpans}

// Every function has TracingGrants, after its own grants, so that the CDK
// app grants them and the grants test compares them like any other.
// A function that starts executions also reads one's status: a start
// carries the caller's trace in its input, so a retried start of a name
// from another trace is not Step Functions' idempotent one, and the
// starter asks whether the execution named is still running.
func init() {
	for i, f := range Functions {
		grants := f.Grants[:len(f.Grants):len(f.Grants)]
		if slices.Contains(grants, GrantStartExecution) {
			grants = append(grants, GrantDescribeExecution)
		}
		Functions[i].Grants = append(grants, TracingGrants...)
	}
}
