// Command consultations is the Lambda function "consultations" of the
// manifest (shared/manifest); its wiring is in shared/app/consultationsfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/consultationsfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("consultations", consultationsfn.Build) }
