// Command authorizer is the Lambda function "authorizer" of the manifest
// (shared/manifest); its wiring is in shared/app/authorizerfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/authorizerfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("authorizer", authorizerfn.Build) }
