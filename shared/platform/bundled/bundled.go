// Package bundled finds the data files a function is deployed with beside
// its bootstrap (the wordllama model, the console's web files): one rule
// for where they are, in Lambda, in the local cloud and in tests.
package bundled

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Dir returns the directory of a bundle named name that holds what has
// says: $envName when set (an error when it does not hold it); else name
// beside the running executable (how a Lambda function is packaged:
// /var/task/<name>); else .local/<local> of the repository, found by
// walking up from the working directory to go.mod (the local cloud, tests
// and `go run`). The error names every place looked and says to run make
// (target).
func Dir(envName, name, local, target string, has func(dir string) bool) (string, error) {
	if d := os.Getenv(envName); d != "" {
		if has(d) {
			return d, nil
		}
		return "", fmt.Errorf("%s: %s=%s does not hold it; run `make %s` (it fills that directory)", name, envName, d, target)
	}
	var looked []string
	if exe, err := os.Executable(); err == nil {
		d := filepath.Join(filepath.Dir(exe), name)
		if has(d) {
			return d, nil
		}
		looked = append(looked, d)
	}
	if root, ok := moduleRoot(); ok {
		d := filepath.Join(root, ".local", local)
		if has(d) {
			return d, nil
		}
		looked = append(looked, d)
	}
	return "", fmt.Errorf("%s: not found (looked in %s); run `make %s` in the repository, or set %s", name, strings.Join(looked, ", "), target, envName)
}

// moduleRoot walks up from the working directory to the one holding go.mod.
func moduleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if st, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && st.Mode().IsRegular() {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
