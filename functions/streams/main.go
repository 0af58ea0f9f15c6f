// Command streams is the Lambda function "streams" of the manifest
// (shared/manifest); its wiring is in shared/app/streamsfn. Its handler
// answers API Gateway's streaming proxy integration (a REST API method with
// responseTransferMode STREAM): the response is a JSON prelude, eight zero
// bytes and the body as it is written.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/streamsfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("streams", streamsfn.Build) }
