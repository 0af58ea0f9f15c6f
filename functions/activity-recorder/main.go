// Command activity-recorder is the Lambda function "activity-recorder" of the manifest (shared/manifest).
package main

import "github.com/conclave-ai/conclave/shared/app"

func main() { app.Main("activity-recorder") }
