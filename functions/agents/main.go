// Command agents is the Lambda function "agents" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/agentsfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/agentsfn"
)

func main() { lambdafn.Main("agents", agentsfn.Build) }
