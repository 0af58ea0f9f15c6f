// Command infra is the CDK app: one Conclave stack per environment, chosen
// with `-c env=<name>` (or CONCLAVE_ENV for `make synth`).
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/infra/stack"
)

func main() {
	defer jsii.Close()
	// The feature flags of cdk.json, so `go run .` (make synth) synthesizes
	// what `cdk deploy` would; the CLI's own context still wins over them.
	flags, err := stack.ContextFromFile("cdk.json")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintln(os.Stderr, "warning: no cdk.json in the working directory; synthesizing without its feature flags (run from infra/)")
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &flags})
	// The stage and what the deploy chose for it: -c env=…, -c
	// alarmEmails=…, -c logRetentionDays=N (stack.ConfigFromContext).
	cfg, err := stack.ConfigFromContext(app.Node(), os.Getenv("CONCLAVE_ENV"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	dist := os.Getenv("CONCLAVE_DIST")
	if dist == "" {
		dist = "../dist"
	}
	props := &stack.Props{Env: cfg, AssetDir: dist}
	account, region := cfg.Account, cfg.Region
	if account == "" {
		account = os.Getenv("CDK_DEFAULT_ACCOUNT")
	}
	if region == "" {
		region = os.Getenv("CDK_DEFAULT_REGION")
	}
	if account != "" || region != "" {
		props.StackProps.Env = &awscdk.Environment{Account: strPtr(account), Region: strPtr(region)}
	}
	stack.NewConclaveStack(app, "Conclave-"+cfg.Name, props)
	app.Synth(nil)
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
