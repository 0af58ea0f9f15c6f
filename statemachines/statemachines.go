// Package statemachines embeds the Amazon States Language definitions, one
// per collaboration pattern plus task delegation, so the CDK app and the
// local cloud deploy exactly these files. Placeholders ${Name} are filled by
// definition substitutions (see manifest.StateMachine.Substitutions).
//
// The five collaboration-pattern session machines are generated from one
// source (package sessionasl): edit statemachines/sessionasl/*.json and run
// `go generate ./statemachines`, not the generated .asl.json files.
package statemachines

//go:generate go run ./sessionasl/aslgen

import (
	"embed"
	"regexp"
	"sort"
	"strings"
)

//go:embed *.asl.json
var files embed.FS

// Definition returns the raw ASL of file.
func Definition(file string) (string, error) {
	b, err := files.ReadFile(file)
	return string(b), err
}

// Files lists the embedded definitions.
func Files() []string {
	entries, _ := files.ReadDir(".")
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

var placeholder = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`)

// Placeholders returns the substitution names a definition uses.
func Placeholders(def string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range placeholder.FindAllStringSubmatch(def, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	sort.Strings(out)
	return out
}

// Substitute fills placeholders the way Step Functions' definition
// substitutions do (plain text replacement).
func Substitute(def string, values map[string]string) string {
	for k, v := range values {
		def = strings.ReplaceAll(def, "${"+k+"}", v)
	}
	return def
}
