// Command consultations is the Lambda function "consultations" of the
// manifest (shared/platform/manifest); its wiring is in shared/wire/consultationsfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/consultationsfn"
)

func main() { lambdafn.Main("consultations", consultationsfn.Build) }
