// Command discovery is the discovery function (see shared/manifest).
package main

import "github.com/conclave-ai/conclave/shared/app"

func main() { app.Main("discovery") }
