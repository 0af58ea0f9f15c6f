// Command memories is the memories function (see shared/manifest).
package main

import "github.com/conclave-ai/conclave/shared/app"

func main() { app.Main("memories") }
