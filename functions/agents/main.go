// Command agents is the Lambda function "agents" of the manifest
// (shared/manifest); its wiring is in shared/app/agentsfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/agentsfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("agents", agentsfn.Build) }
