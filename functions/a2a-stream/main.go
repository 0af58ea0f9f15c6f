// Command a2a-stream is the Lambda function "a2a-stream" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/a2astreamfn. Its handler
// answers API Gateway's streaming proxy integration (a REST API method with
// responseTransferMode STREAM): the response is a JSON prelude, eight zero
// bytes and the body as it is written.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/a2astreamfn"
)

func main() { lambdafn.Main("a2a-stream", a2astreamfn.Build) }
