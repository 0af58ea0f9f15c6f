// Command task-worker is the Lambda function "task-worker" of the manifest (shared/manifest).
package main

import "github.com/conclave-ai/conclave/shared/app"

func main() { app.Main("task-worker") }
