// Command message-fanout is the Lambda function "message-fanout" of the manifest
// (shared/manifest); its wiring is in shared/app/fanoutfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/fanoutfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("message-fanout", fanoutfn.Build) }
