// Command result-poster is the Lambda function "result-poster" of the
// manifest (shared/platform/manifest); its wiring is in shared/wire/resultposterfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/resultposterfn"
)

func main() { lambdafn.Main("result-poster", resultposterfn.Build) }
