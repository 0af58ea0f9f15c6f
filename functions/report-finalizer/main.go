// Command report-finalizer is the Lambda function "report-finalizer" of the
// manifest (shared/manifest); its wiring is in shared/app/finalizerfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/finalizerfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("report-finalizer", finalizerfn.Build) }
