// Command conversations is the Lambda function "conversations" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/conversationsfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/conversationsfn"
)

func main() { lambdafn.Main("conversations", conversationsfn.Build) }
