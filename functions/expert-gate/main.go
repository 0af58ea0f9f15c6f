// Command expert-gate is the expert-gate function (see shared/manifest).
package main

import "github.com/conclave-ai/conclave/shared/app"

func main() { app.Main("expert-gate") }
