package stack_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// docSection returns the section of the document at path (from the
// repository's root, e.g. docs/testing.md) under heading (its level
// included, e.g. "### Template checks") up to the next heading of that
// level or above.
func docSection(t *testing.T, path, heading string) string {
	t.Helper()
	raw, err := os.ReadFile("../../" + path)
	require.NoError(t, err)
	text := string(raw)
	start := strings.Index(text, "\n"+heading+"\n")
	require.GreaterOrEqual(t, start, 0, "%s has no %q", path, heading)
	text = text[start+len(heading)+2:]
	// Up to its own level from "##" (a document's only "#" is its title;
	// a "# " line in a shell block is a comment).
	level := strings.Index(heading, " ")
	for l := 2; l <= level; l++ {
		if end := strings.Index(text, "\n"+strings.Repeat("#", l)+" "); end >= 0 {
			text = text[:end]
		}
	}
	return text
}

// Every check the template linters skip is explained in docs/testing.md ("Template
// checks"): each checkov skip-check has a row of the findings table with
// its reason, each cfn-lint rule turned off a bullet; and the document
// explains no check the configuration does not skip.
func TestEveryTemplateCheckSkippedIsExplained(t *testing.T) {
	// GIVEN the linters' configurations and docs/testing.md's section
	var checkov struct {
		SkipCheck []string `yaml:"skip-check"`
	}
	raw, err := os.ReadFile("../../localstack/checkov.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, &checkov))
	require.NotEmpty(t, checkov.SkipCheck)
	var cfnLint struct {
		IgnoreChecks []string `yaml:"ignore_checks"`
	}
	raw, err = os.ReadFile("../../localstack/cfnlintrc.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, &cfnLint))
	section := docSection(t, "docs/testing.md", "### Template checks")

	// WHEN docs/testing.md's rows are read: | `CKV_…` title | findings | why |
	rows := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		if m := regexp.MustCompile("^\\| `(CKV[0-9A-Z_]+)`").FindStringSubmatch(line); m != nil {
			rows[m[1]] = strings.Split(strings.Trim(line, "| "), "|")
		}
	}

	// THEN each skipped check has its row, with its counts and a reason
	for _, id := range checkov.SkipCheck {
		row, ok := rows[id]
		if !assert.True(t, ok, "checkov skips %s, which docs/testing.md does not explain", id) {
			continue
		}
		require.Len(t, row, 3, id)
		assert.Regexp(t, `^\s*\d+ \+ \d+\s*$`, row[1], "%s: findings on dev + prod", id)
		assert.Greater(t, len(strings.TrimSpace(row[2])), 40, "%s: why it does not apply", id)
	}
	for id := range rows {
		assert.Contains(t, checkov.SkipCheck, id, "docs/testing.md explains %s, which checkov does not skip", id)
	}
	// AND each cfn-lint rule turned off has its bullet
	for _, rule := range cfnLint.IgnoreChecks {
		assert.Contains(t, section, "\n- `"+rule+"` (", "cfn-lint ignores %s, which docs/testing.md does not explain", rule)
	}
}

// docs/operations.md's alarm count ("Running it in production") is the
// templates' (the nested monitoring stack's):
// the stated total, and the table's counts adding up to it.
func TestTheOperationsDocCountsTheAlarms(t *testing.T) {
	section := docSection(t, "docs/operations.md", "### Running it in production")
	m := regexp.MustCompile(`\*\*Alarms\*\*: (\d+) a stage`).FindStringSubmatch(section)
	require.NotNil(t, m, "docs/operations.md states the number of alarms a stage")
	stated, _ := strconv.Atoi(m[1])
	sum := 0
	for _, row := range regexp.MustCompile("(?m)^\\s*\\| `[^|]+` \\| (\\d+) \\|").FindAllStringSubmatch(section, -1) {
		n, _ := strconv.Atoi(row[1])
		sum += n
	}
	assert.Equal(t, stated, sum, "the alarm table's counts add up to the total")
	for _, env := range []string{"dev", "prod"} {
		_, tpl, _ := synthMonitoring(t, env)
		assert.Equal(t, stated, len(resources(tpl, "AWS::CloudWatch::Alarm")), "%s: the alarms in the template", env)
	}
}
