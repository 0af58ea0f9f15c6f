// Command task-lifecycle is the Lambda function "task-lifecycle" of the manifest (shared/manifest).
package main

import "github.com/conclave-ai/conclave/shared/app"

func main() { app.Main("task-lifecycle") }
