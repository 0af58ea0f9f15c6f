// Command tasks is the Lambda function "tasks" of the manifest (shared/manifest).
package main

import "github.com/conclave-ai/conclave/shared/app"

func main() { app.Main("tasks") }
