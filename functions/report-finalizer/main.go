// Command report-finalizer is the Lambda function "report-finalizer" of the
// manifest (shared/platform/manifest); its wiring is in shared/wire/reportfinalizerfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/reportfinalizerfn"
)

func main() { lambdafn.Main("report-finalizer", reportfinalizerfn.Build) }
