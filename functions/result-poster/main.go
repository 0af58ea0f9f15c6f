// Command result-poster is the Lambda function "result-poster" of the
// manifest (shared/manifest); its wiring is in shared/app/posterfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/posterfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("result-poster", posterfn.Build) }
