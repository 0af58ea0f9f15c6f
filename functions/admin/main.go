// Command admin is the Lambda function "admin" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/adminfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/adminfn"
)

func main() { lambdafn.Main("admin", adminfn.Build) }
