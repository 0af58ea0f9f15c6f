package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
)

// Module is the module's path.
const Module = "github.com/conclave-ai/conclave"

// Package is what go list reports of one package (its non-test files).
type Package struct {
	ImportPath string
	Name       string
	// Doc is the first sentence of the package's doc comment.
	Doc     string
	Imports []string
	// Deps is the transitive closure of Imports.
	Deps []string
}

// Rel is the package's path relative to the module ("shared/chat").
func (p Package) Rel() string { return Rel(p.ImportPath) }

// Rel is an import path relative to the module, or the path itself for
// a package outside it.
func Rel(importPath string) string { return strings.TrimPrefix(importPath, Module+"/") }

// List runs go list on patterns (import paths, or ./... patterns read
// from the current directory) and returns the packages sorted by import
// path.
func List(patterns ...string) ([]Package, error) {
	cmd := exec.Command("go", append([]string{"list", "-json=ImportPath,Name,Doc,Imports,Deps"}, patterns...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w: %s", strings.Join(patterns, " "), err, stderr.Bytes())
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			slices.SortFunc(pkgs, func(a, b Package) int { return strings.Compare(a.ImportPath, b.ImportPath) })
			return pkgs, nil
		}
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
}
