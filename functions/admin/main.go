// Command admin is the Lambda function "admin" of the manifest
// (shared/manifest); its wiring is in shared/app/adminfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/adminfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("admin", adminfn.Build) }
