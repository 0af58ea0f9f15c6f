// Command message-fanout is the message-fanout function (see shared/manifest).
package main

import "github.com/conclave-ai/conclave/shared/app"

func main() { app.Main("message-fanout") }
