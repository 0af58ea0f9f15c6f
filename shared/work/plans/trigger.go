package plans

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The planner is a model call, so it is made only when a message looks
// compound (seed 003: "single-intent queries, 80%+ of traffic, bypass the
// planner entirely"). The trigger is either of:
//
//   - sequencing words: "X, then Y", "X and then Y", "first X … then Y",
//     "after that", "afterwards", "followed by", "once that is done";
//   - confident skills of two or more agents: the gate scored skills of
//     at least two different agents at or above the confidence threshold.
//
// A message that triggers may still be single-intent: the planner then
// answers is_compound false and the message is dispatched as usual.

var sequencing = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(,|;|\band)\s*then\b`),
	regexp.MustCompile(`(?i)\bfirst\b.*\bthen\b`),
	regexp.MustCompile(`(?i)\bafter that\b|\bafterwards\b|\bfollowed by\b`),
	regexp.MustCompile(`(?i)\bonce (that|this|it)(['’]s| is) (done|ready|finished)\b`),
}

// Confident is a skill the gate scored for the message.
type Confident struct {
	Agent string
	Score float64
}

// Trigger reports whether the planner is asked for message, and why.
func Trigger(message string, scored []Confident, threshold float64) (bool, string) {
	for _, re := range sequencing {
		if m := re.FindString(message); m != "" {
			return true, fmt.Sprintf("a multi-step request (%q)", strings.TrimSpace(m))
		}
	}
	var agents []string
	for _, c := range scored {
		if c.Score >= threshold && !slices.Contains(agents, c.Agent) {
			agents = append(agents, c.Agent)
		}
	}
	if len(agents) >= 2 {
		slices.Sort(agents)
		return true, fmt.Sprintf("confident skills of %d agents (%s)", len(agents), strings.Join(agents, ", "))
	}
	return false, ""
}
