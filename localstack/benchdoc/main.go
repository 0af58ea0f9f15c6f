// Command benchdoc writes a benchmark's figures into a section of a
// document (docs/measurements.md), so the figures a machine measures are
// written by the command that measures them, never copied by hand:
//
//	<command printing Markdown> | go run ./localstack/benchdoc -section gate
//
// The section is the text between the lines
//
//	<!-- generated: gate -->
//	<!-- /generated: gate -->
//
// which must both be in the document once. Everything between them is
// replaced by standard input; the rest of the document is left as it is.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	doc := flag.String("doc", "docs/measurements.md", "the document")
	section := flag.String("section", "", "the section's name")
	flag.Parse()
	if *section == "" {
		fail(fmt.Errorf("-section is required"))
	}
	body, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	old, err := os.ReadFile(*doc)
	if err != nil {
		fail(err)
	}
	out, err := Splice(old, *section, body)
	if err != nil {
		fail(fmt.Errorf("%s: %w", *doc, err))
	}
	if err := os.WriteFile(*doc, out, 0o644); err != nil {
		fail(err)
	}
	fmt.Fprintf(os.Stderr, "benchdoc: section %q of %s written\n", *section, *doc)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchdoc:", err)
	os.Exit(2)
}

// Splice replaces the body of the named generated section of doc.
func Splice(doc []byte, section string, body []byte) ([]byte, error) {
	begin := []byte("<!-- generated: " + section + " -->\n")
	end := []byte("<!-- /generated: " + section + " -->")
	i := bytes.Index(doc, begin)
	if i < 0 || bytes.Count(doc, begin) != 1 {
		return nil, fmt.Errorf("section %q: want exactly one line %q", section, bytes.TrimSpace(begin))
	}
	j := bytes.Index(doc[i:], end)
	if j < 0 || bytes.Count(doc, end) != 1 {
		return nil, fmt.Errorf("section %q: want exactly one line %q after its start", section, end)
	}
	j += i
	body = bytes.TrimRight(body, "\n")
	var out bytes.Buffer
	out.Write(doc[:i+len(begin)])
	if len(body) > 0 {
		out.Write(body)
		out.WriteByte('\n')
	}
	out.Write(doc[j:])
	return out.Bytes(), nil
}
