package stack

import (
	"encoding/json"
	"fmt"
	"os"
)

// ContextFromFile returns the "context" object of a cdk.json file.
//
// infra/cdk.json holds the feature flags `cdk init` writes for the pinned
// aws-cdk-lib (its recommended-feature-flags.json). The CDK CLI hands them to
// the app on cdk synth and cdk deploy, but an app built with
// awscdk.NewApp(nil) outside the CLI (stack tests, make synth) never sees
// them and would synthesize with the library's legacy defaults. Passing this
// map as AppProps.Context closes that gap; under the CLI the CLI's context
// takes precedence over AppProps.Context key by key, so nothing is
// overridden.
func ContextFromFile(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return doc.Context, nil
}
