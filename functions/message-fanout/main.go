// Command message-fanout is the Lambda function "message-fanout" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/messagefanoutfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/messagefanoutfn"
)

func main() { lambdafn.Main("message-fanout", messagefanoutfn.Build) }
