// Command authorizer is the Lambda function "authorizer" of the manifest (shared/manifest).
package main

import "github.com/conclave-ai/conclave/shared/app"

func main() { app.Main("authorizer") }
