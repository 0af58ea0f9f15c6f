// Command conversations is the Lambda function "conversations" of the manifest
// (shared/manifest); its wiring is in shared/app/conversationsfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/conversationsfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("conversations", conversationsfn.Build) }
