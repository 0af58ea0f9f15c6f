// Command messages is the Lambda function "messages" of the manifest
// (shared/manifest); its wiring is in shared/app/messagesfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/messagesfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("messages", messagesfn.Build) }
