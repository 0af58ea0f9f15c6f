// Command messages is the Lambda function "messages" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/messagesfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/messagesfn"
)

func main() { lambdafn.Main("messages", messagesfn.Build) }
