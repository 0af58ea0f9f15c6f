// Command messages is the messages function (see shared/manifest).
package main

import "github.com/conclave-ai/conclave/shared/app"

func main() { app.Main("messages") }
