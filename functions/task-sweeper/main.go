// Command task-sweeper is the Lambda function "task-sweeper" of the manifest (shared/manifest).
package main

import "github.com/conclave-ai/conclave/shared/app"

func main() { app.Main("task-sweeper") }
