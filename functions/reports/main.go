// Command reports is the Lambda function "reports" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/reportsfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/reportsfn"
)

func main() { lambdafn.Main("reports", reportsfn.Build) }
