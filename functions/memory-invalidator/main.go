// Command memory-invalidator is the memory-invalidator function (see shared/manifest).
package main

import "github.com/conclave-ai/conclave/shared/app"

func main() { app.Main("memory-invalidator") }
