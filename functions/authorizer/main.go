// Command authorizer is the Lambda function "authorizer" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/authorizerfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/authorizerfn"
)

func main() { lambdafn.Main("authorizer", authorizerfn.Build) }
