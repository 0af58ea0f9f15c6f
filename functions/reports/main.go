// Command reports is the Lambda function "reports" of the manifest
// (shared/manifest); its wiring is in shared/app/reportsfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/reportsfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("reports", reportsfn.Build) }
