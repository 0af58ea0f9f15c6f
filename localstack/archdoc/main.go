// Command archdoc writes what the code says of its own architecture, so
// no one keeps it by hand (make docs):
//
//   - the list of the packages under shared/ that link AWS service
//     clients (archtest.AWSClients), into shared/archtest/testdata, which
//     shared/archtest compares with the code;
//   - the map of shared/ (archtest.Map), the packages wing by wing with
//     the first sentence of their doc comments, on standard output, for
//     localstack/benchdoc to put into its section of docs/architecture.md
//     (one command splices every generated section of the docs).
//
// make docs runs it from the module's root and hands the map to benchdoc
// only when it succeeded, so a failed run leaves the document as it was.
package main

import (
	"fmt"
	"os"

	"github.com/conclave-ai/conclave/shared/archtest"
)

func main() {
	pkgs, err := archtest.List(archtest.Module + "/shared/...")
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(archtest.AWSClientsFile, []byte(archtest.AWSClients(pkgs)), 0o644); err != nil {
		fail(err)
	}
	fmt.Fprintf(os.Stderr, "archdoc: %s written\n", archtest.AWSClientsFile)
	fmt.Print(archtest.Map(pkgs))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "archdoc:", err)
	os.Exit(2)
}
