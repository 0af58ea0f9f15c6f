// Command aslgen writes the collaboration-pattern session machines
// (statemachines/<pattern>.asl.json) from their one source in
// statemachines/sessionasl. Run it with `go generate ./statemachines`; it
// writes into the working directory, which go generate sets to
// statemachines/.
package main

import (
	"fmt"
	"os"

	"github.com/conclave-ai/conclave/statemachines/sessionasl"
)

func main() {
	for _, p := range sessionasl.Patterns() {
		asl, err := sessionasl.Compose(p)
		if err == nil {
			err = os.WriteFile(sessionasl.File(p), asl, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "aslgen:", err)
			os.Exit(1)
		}
	}
}
