package localmodel

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/words"
)

// chooseTool is the tier-0 router model's tool (shared/routing/chooser).
const chooseTool = "choose_agent"

// The router model's call is made for no agent, so it has no script: a
// marker in the question makes it misbehave instead (local only; the
// gate scores the question with its marker).
const (
	// RouterFail makes the call fail (models.ErrModel).
	RouterFail = "[tier0:fail]"
	// RouterGarbage makes it call choose_agent with input that is not JSON.
	RouterGarbage = "[tier0:garbage]"
	// RouterTimeout makes it block until the call's context ends.
	RouterTimeout = "[tier0:timeout]"
)

// candidateRE reads one candidate line of the router model's prompt:
// "- slug (Name), skill name: description".
var candidateRE = regexp.MustCompile(`(?m)^- (\S+) \((.*?)\), skill (\S*): (.*)$`)

// routerCandidate is one candidate as the prompt lists it.
type routerCandidate struct{ agent, name, skill, description string }

// routerAnswer answers a request offering choose_agent: the candidate
// whose name and skill description share the most stemmed content words
// (words.Tokens) with the question, the first listed of equals; with
// confidence 0.8 when it shares at least one word, 0.3 otherwise.
func routerAnswer(req models.Request, resp models.Response) models.Response {
	q := lastUser(req)
	var cands []routerCandidate
	for _, m := range candidateRE.FindAllStringSubmatch(req.System, -1) {
		cands = append(cands, routerCandidate{agent: m[1], name: m[2], skill: m[3], description: m[4]})
	}
	texts := make([]string, len(cands))
	for i, c := range cands {
		texts[i] = c.name + " " + c.description
	}
	best, shared := closest(q, texts)
	input := map[string]any{"agent": "", "skill": "", "confidence": 0.3, "reason": "no candidate"}
	if best >= 0 {
		c := cands[best]
		input["agent"], input["skill"] = c.agent, c.skill
		input["reason"] = fmt.Sprintf("%s shares no word with the question", c.name)
		if len(shared) > 0 {
			input["confidence"] = 0.8
			input["reason"] = fmt.Sprintf("%s shares %s with the question", c.name, strings.Join(shared, ", "))
		}
	}
	raw, _ := json.Marshal(input)
	if strings.Contains(q, RouterGarbage) {
		raw = []byte(`{"agent": "` + strings.TrimSpace(q))
	}
	resp.ToolCalls = []models.ToolCall{{ID: "call-1", Name: chooseTool, Input: string(raw)}}
	resp.OutputTokens = models.EstimateTokens(string(raw))
	return resp
}

// closest is the words-only match of the local model's router and
// planner: the index of the text sharing the most stemmed content words
// (words.Tokens) with q, the first listed of equals, and the words they
// share, sorted; -1 when there are no texts.
func closest(q string, texts []string) (int, []string) {
	asked := slices.Compact(slices.Sorted(slices.Values(words.Tokens(q))))
	best, shared := -1, []string(nil)
	for i, t := range texts {
		have := words.Tokens(t)
		var common []string
		for _, w := range asked {
			if slices.Contains(have, w) {
				common = append(common, w)
			}
		}
		if best < 0 || len(common) > len(shared) {
			best, shared = i, common
		}
	}
	return best, shared
}
