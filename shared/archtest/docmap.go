package archtest

import (
	"fmt"
	"strings"
)

// MapDoc is the document whose generated section MapSection holds the
// map of shared/ (Map), relative to the module.
const (
	MapDoc     = "docs/architecture.md"
	MapSection = "shared"
)

// Map renders the map of shared/ in Markdown: each entry in the order of
// Entries with the first sentence of its package doc, then each package
// under it with the first sentence of its own. A package's doc is its
// description, so the map is as current as the code's comments.
func Map(pkgs []Package) string {
	var b strings.Builder
	for i, e := range Entries {
		if i > 0 {
			b.WriteString("\n")
		}
		kind := fmt.Sprintf("wing %d", e.Rank+1)
		if e.Layer {
			kind = "layer"
		}
		fmt.Fprintf(&b, "### `shared/%s` (%s)\n\n", e.Name, kind)
		var under []Package
		for _, p := range pkgs {
			switch rel := p.Rel(); {
			case rel == "shared/"+e.Name:
				fmt.Fprintf(&b, "%s\n", describe(p))
			case strings.HasPrefix(rel, "shared/"+e.Name+"/"):
				under = append(under, p)
			}
		}
		fmt.Fprintf(&b, "Its place: %s.\n", e.Why)
		if len(under) > 0 {
			b.WriteString("\n")
		}
		for _, p := range under {
			fmt.Fprintf(&b, "- %s\n", describe(p))
		}
	}
	return b.String()
}

// describe is the first sentence of p's doc with the package named by its
// path: "Package apperr defines …" reads "`shared/platform/apperr`
// defines …", whatever name the comment was written with.
func describe(p Package) string {
	path := "`" + p.Rel() + "`"
	if p.Doc == "" {
		return path + ": (no doc comment)"
	}
	if rest, ok := strings.CutPrefix(p.Doc, "Package "); ok {
		if _, sentence, ok := strings.Cut(rest, " "); ok {
			return path + " " + sentence
		}
	}
	return path + ": " + p.Doc
}

// Section returns the body of the generated section name of doc: the
// lines between "<!-- generated: name -->" and "<!-- /generated: name -->"
// (the markers localstack/benchdoc writes between).
func Section(doc, name string) (string, error) {
	begin, end := "<!-- generated: "+name+" -->\n", "<!-- /generated: "+name+" -->"
	if strings.Count(doc, begin) != 1 || strings.Count(doc, end) != 1 {
		return "", fmt.Errorf("want one line %q and one line %q", strings.TrimSpace(begin), end)
	}
	_, body, _ := strings.Cut(doc, begin)
	body, _, ok := strings.Cut(body, end)
	if !ok {
		return "", fmt.Errorf("%q comes before %q", end, strings.TrimSpace(begin))
	}
	return body, nil
}
