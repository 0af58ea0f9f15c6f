// Command streams is the Lambda function "streams" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/streamsfn. Its handler
// answers API Gateway's streaming proxy integration (a REST API method with
// responseTransferMode STREAM): the response is a JSON prelude, eight zero
// bytes and the body as it is written.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/streamsfn"
)

func main() { lambdafn.Main("streams", streamsfn.Build) }
