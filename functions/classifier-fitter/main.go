// Command classifier-fitter is the Lambda function "classifier-fitter" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/classifierfitterfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/classifierfitterfn"
)

func main() { lambdafn.Main("classifier-fitter", classifierfitterfn.Build) }
