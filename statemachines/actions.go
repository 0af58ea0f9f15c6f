package statemachines

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Actions returns, for each placeholder of def that a Task state acts on,
// the IAM actions the state machine's role needs for it: the CDK app
// grants a machine exactly these, each on the resource its substitution
// names, and nothing for a placeholder no Task acts on.
//
// A Task acts on the placeholders of its Resource and its Parameters (or
// Arguments): "arn:aws:states:::lambda:invoke" with FunctionName
// "${WorkerFunctionArn}" needs lambda:InvokeFunction on that function. The
// integration patterns ".waitForTaskToken" need nothing more; ".sync" and
// services not listed in integrationActions are refused, since they need
// actions this does not know.
func Actions(def string) (map[string][]string, error) {
	var doc any
	if err := json.Unmarshal([]byte(def), &doc); err != nil {
		return nil, err
	}
	sets := map[string]map[string]bool{}
	if err := walkTasks(doc, func(task map[string]any) error {
		resource, _ := task["Resource"].(string)
		action, err := integrationAction(resource)
		if err != nil {
			return err
		}
		var targets []string
		for _, field := range []string{"Resource", "Parameters", "Arguments"} {
			targets = append(targets, placeholdersIn(task[field])...)
		}
		for _, p := range targets {
			if sets[p] == nil {
				sets[p] = map[string]bool{}
			}
			sets[p][action] = true
		}
		return nil
	}); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for p, set := range sets {
		for a := range set {
			out[p] = append(out[p], a)
		}
		sort.Strings(out[p])
	}
	return out, nil
}

// walkTasks calls fn for every Task state of the definition, nested
// states (Map, Parallel) included.
func walkTasks(v any, fn func(map[string]any) error) error {
	switch v := v.(type) {
	case map[string]any:
		if v["Type"] == "Task" {
			return fn(v)
		}
		for _, child := range v {
			if err := walkTasks(child, fn); err != nil {
				return err
			}
		}
	case []any:
		for _, child := range v {
			if err := walkTasks(child, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// integrationActions maps the optimized integrations the definitions may
// use to the action each authorizes as.
var integrationActions = map[string]string{
	"lambda:invoke":       "lambda:InvokeFunction",
	"sqs:sendMessage":     "sqs:SendMessage",
	"events:putEvents":    "events:PutEvents",
	"dynamodb:getItem":    "dynamodb:GetItem",
	"dynamodb:putItem":    "dynamodb:PutItem",
	"dynamodb:updateItem": "dynamodb:UpdateItem",
	"dynamodb:deleteItem": "dynamodb:DeleteItem",
}

var lambdaARN = regexp.MustCompile(`^\$\{[A-Za-z0-9_]+\}$`)

// integrationAction is the IAM action of a Task's Resource.
func integrationAction(resource string) (string, error) {
	if lambdaARN.MatchString(resource) {
		return "lambda:InvokeFunction", nil // a function ARN as the Resource
	}
	api, ok := strings.CutPrefix(resource, "arn:aws:states:::")
	if !ok {
		return "", fmt.Errorf("task resource %q: not an optimized integration", resource)
	}
	api = strings.TrimSuffix(api, ".waitForTaskToken")
	action, ok := integrationActions[api]
	if !ok {
		return "", fmt.Errorf("task resource %q: no IAM action known for it (statemachines.integrationActions)", resource)
	}
	return action, nil
}

// placeholdersIn returns the placeholders in the strings of v.
func placeholdersIn(v any) []string {
	var out []string
	switch v := v.(type) {
	case string:
		for _, m := range placeholder.FindAllStringSubmatch(v, -1) {
			out = append(out, m[1])
		}
	case map[string]any:
		for _, child := range v {
			out = append(out, placeholdersIn(child)...)
		}
	case []any:
		for _, child := range v {
			out = append(out, placeholdersIn(child)...)
		}
	}
	return out
}
